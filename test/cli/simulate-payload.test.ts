import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hintsOf } from '../../src/events/hints.ts';
import { parseHookEvent } from '../../src/events/schemas.ts';
import { snapshotFromPayload } from '../../src/cli/simulate-payload.ts';

const fixture = JSON.parse(readFileSync('test/fixtures/hooks/merge_request.json', 'utf8'));

function snapshotOf(body: unknown) {
  const parsed = parseHookEvent('merge_request', body);
  if (!parsed.ok) throw new Error(parsed.message);
  const hint = hintsOf(parsed.event).find((h) => h.target === 'item');
  if (!hint || hint.target !== 'item') throw new Error('no item hint');
  const trigger = { kind: 'merge_request' as const, byBot: false };
  return snapshotFromPayload(
    parsed.event,
    hint.item,
    trigger,
    {
      changedFiles: false,
      commentMarkers: false,
      authorAccess: false,
      actorAccess: false,
      mergeGate: false,
      noteChanges: false,
    },
    0,
  ).snapshot;
}

describe('snapshotFromPayload: the source project of a merge request', () => {
  it.each([
    ['a number', 14, 14],
    ['a string of digits (some 8.x payloads)', '14', 14],
  ])('is read when the payload gives it as %s', (_name, given, expected) => {
    const body = {
      ...fixture,
      object_attributes: { ...fixture.object_attributes, source_project_id: given },
    };
    expect(snapshotOf(body)).toMatchObject({ kind: 'merge_request', source_project_id: expected });
  });

  it('is left out when the payload lacks it (the item project is then used)', () => {
    const { source_project_id: _dropped, ...attrs } = fixture.object_attributes;
    expect(snapshotOf({ ...fixture, object_attributes: attrs })).not.toHaveProperty('source_project_id');
  });
});
