import { describe, expect, it } from 'vitest';
import type { Trigger } from '../../../src/rules/engine/snapshot.ts';
import { issue, runCondition } from '../support.ts';

const on = (trigger: Omit<Trigger, 'byBot'>) =>
  issue('issue-open', { trigger: { byBot: false, ...trigger } });

describe('event condition', () => {
  it.each([
    {
      name: 'issue.open',
      trigger: { kind: 'issue', action: 'open' },
      spec: 'issue.open',
      value: 'issue.open',
      ok: true,
    },
    {
      name: 'an issue hook without action is an update',
      trigger: { kind: 'issue' },
      spec: 'issue.update',
      value: 'issue.update',
      ok: true,
    },
    {
      name: 'issue.* covers every action',
      trigger: { kind: 'issue', action: 'close' },
      spec: 'issue.*',
      value: 'issue.close',
      ok: true,
    },
    {
      name: 'merge_request.* does not cover issues',
      trigger: { kind: 'issue', action: 'close' },
      spec: 'merge_request.*',
      value: 'issue.close',
      ok: false,
    },
    {
      name: 'a note',
      trigger: { kind: 'note', note: 'hi' },
      spec: 'note.created',
      value: 'note.created',
      ok: true,
    },
    {
      name: 'a status',
      trigger: { kind: 'status' },
      spec: { in: ['push', 'status.changed'] },
      value: 'status.changed',
      ok: true,
    },
    { name: 'a sweep', trigger: { kind: 'schedule' }, spec: 'schedule', value: 'schedule', ok: true },
    { name: 'a manual run', trigger: { kind: 'manual' }, spec: { in: ['push'] }, value: 'manual', ok: false },
  ] as const)('$name', ({ trigger, spec, value, ok }) => {
    expect(runCondition({ event: spec }, on(trigger))).toEqual({ value, ok });
  });
});
