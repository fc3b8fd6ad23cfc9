/**
 * The refusal log's rate limit, with a short window: the first refusal is told at once, the others
 * of the window in one line when it ends.
 */
import { describe, expect, it } from 'vitest';
import { createSecretRefusalLog as createRefusalLog } from '../../src/receiver/secret-refusal-log.ts';
import { waitFor } from '../helpers/wait-for.ts';

describe('refused deliveries, logged with a rate limit', () => {
  it('logs the first at once and counts the rest of the window in one line', async () => {
    const lines: { obj: Record<string, unknown>; msg: string }[] = [];
    const refusals = createRefusalLog(
      { warn: (obj, msg) => void lines.push({ obj: obj as Record<string, unknown>, msg }) },
      { windowMs: 200, hint: 'fix the secret' },
    );
    try {
      refusals.refused('10.0.0.1');
      refusals.refused('10.0.0.2');
      refusals.refused('10.0.0.2');
      refusals.refused(undefined);
      expect(lines).toEqual([
        {
          obj: { remote: '10.0.0.1' },
          msg: 'delivery refused (401): wrong or missing secret token from 10.0.0.1; fix the secret',
        },
      ]);
      await waitFor(() => (lines.length === 2 ? true : undefined), 10_000, 'the window to end');
      expect(lines[1]).toEqual({
        obj: { refused: 3, from: ['10.0.0.2'], windowMs: 200 },
        msg: '3 more deliveries refused for their secret in the last 200 ms',
      });
    } finally {
      refusals.close();
    }
  });
});
