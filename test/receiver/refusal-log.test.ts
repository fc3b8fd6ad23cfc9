import { describe, expect, it } from 'vitest';
import { createRefusalLog } from '../../src/receiver/refusal-log.ts';

function recordingLog() {
  const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  return {
    lines,
    warn: (obj: object, msg: string) =>
      lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
    info: (obj: object, msg: string) =>
      lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg }),
  };
}

describe('refusals logged once per burst', () => {
  it('logs the first refusal of a burst with its reason, and the end of the burst with the count', () => {
    const log = recordingLog();
    const refusals = createRefusalLog(log);
    refusals.accepted(performance.now()); // no burst under way: nothing to say
    const beforeBurst = performance.now();
    for (let i = 0; i < 600; i++) refusals.refused('inbox_full', 'inbox full: 10000 deliveries wait');
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toMatchObject({
      level: 'warn',
      obj: { outcome: 'inbox_full', reason: 'inbox full: 10000 deliveries wait' },
    });
    // One that arrived before the burst began, answered only now (its write was in flight): the
    // inbox may still be full, so the burst goes on.
    refusals.accepted(beforeBurst - 1);
    expect(log.lines).toHaveLength(1);
    refusals.accepted(performance.now());
    refusals.accepted(performance.now());
    expect(log.lines).toHaveLength(2);
    expect(log.lines[1]).toMatchObject({
      level: 'info',
      obj: { refused: 600 },
      msg: 'accepting deliveries again after refusing 600',
    });
    // A new burst is logged again.
    refusals.refused('overloaded', 'too many deliveries being read at once');
    expect(log.lines).toHaveLength(3);
    expect(log.lines[2]?.obj).toMatchObject({ outcome: 'overloaded' });
  });
});
