/**
 * Which runs start the review of a merge request's `.hookbot.yml` (issue 29 item 2): every event of
 * a burst counts, as the pipeline folds it (its `coalesce`), not only the latest one.
 */
import { describe, expect, it } from 'vitest';
import { coalesce } from '../../../src/receiver/pipeline.ts';
import type { Trigger } from '../../../src/rules/engine/snapshot.ts';
import { startsReview } from '../../../src/rules/repository/repository-rules.ts';

const opened: Trigger = { kind: 'merge_request', action: 'open', byBot: false };
const updated: Trigger = { kind: 'merge_request', action: 'update', byBot: false };
const push: Trigger = { kind: 'push', byBot: false };
const ciStatus: Trigger = { kind: 'status', byBot: false };
const botStatus: Trigger = { kind: 'status', byBot: true };
const botNote: Trigger = { kind: 'note', byBot: true, noteId: 7 };

describe('the review hears every event of a burst', () => {
  it('an open and a CI status a millisecond later (one trigger named status.changed)', () => {
    const burst = coalesce([opened, ciStatus]);
    expect(burst).toHaveLength(1);
    expect(burst[0]!.kind).toBe('status');
    expect(startsReview(burst)).toBe(true);
  });

  it('a push, the update it causes and a CI status', () => {
    expect(startsReview(coalesce([push, updated, ciStatus]))).toBe(true);
    expect(startsReview(coalesce([updated, push, ciStatus, botNote]))).toBe(true);
  });

  it("the bot's own status and comment start nothing, alone or together", () => {
    expect(startsReview(coalesce([botStatus]))).toBe(false);
    expect(startsReview(coalesce([botStatus, botNote]))).toBe(false);
    expect(startsReview(coalesce([ciStatus]))).toBe(false);
  });

  it("a change of the merge request that the bot made starts nothing; someone else's in the same burst does", () => {
    const botUpdate: Trigger = { kind: 'merge_request', action: 'update', byBot: true };
    expect(startsReview(coalesce([botUpdate, botStatus]))).toBe(false);
    expect(startsReview(coalesce([botUpdate, opened, botStatus]))).toBe(true);
  });

  it('a manual run', () => {
    expect(startsReview([{ kind: 'manual', byBot: false }])).toBe(true);
  });
});
