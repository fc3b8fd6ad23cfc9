import { z } from 'zod';
import { defineCondition, MERGE_REQUESTS_ONLY, type JsonValue } from '../engine/define-condition.ts';
import { classifyStatus } from '../engine/status-buckets.ts';

export const STATUSES_STATES = ['success', 'pending', 'failed', 'missing'] as const;

const DESCRIBE = {
  success: 'are all success',
  pending: 'are pending or running (none failed or missing)',
  failed: 'include a failure',
  missing: 'include one not reported yet',
} as const;

export const statuses = defineCondition({
  name: 'statuses',
  summary:
    "Commit statuses of the current head commit of the merge request, by name (latest per name). `state: success` (the default): every required status passed (a missing one is never success; a failure marked allow_failure passes, as in the server pipeline). `pending`: all are reported, none failed, some still pending or running (what arming merge_when_build_succeeds needs). `failed`: one failed or was canceled. `missing`: one is not reported yet. With `rules.status_authors` set, only statuses those accounts (or the bot, for the operator's rules) posted count: those of anyone else are left out, and so are those the bot posted for a rule of a project's own `.hookbot.yml` (their description starts with `[.hookbot.yml]`: [repository-rules.md](repository-rules.md#statuses)).",
  example: { required: ['ci/build', 'ci/test'], state: 'success' },
  params: z.strictObject({
    required: z.array(z.string().min(1)).min(1),
    state: z.enum(STATUSES_STATES).default('success'),
  }),
  itemKinds: MERGE_REQUESTS_ONLY,
  describe: (p) => `statuses ${p.required.join(', ')} ${DESCRIBE[p.state]}`,
  compile: ({ required, state }) => ({
    guarantees: [{ kind: 'statuses', state, required }],
    evaluate: ({ snapshot }) => {
      if (snapshot.kind !== 'merge_request' || snapshot.statuses === null || snapshot.sha === null)
        return {
          value: null,
          ok: false,
          unknown: true,
          note: 'the statuses of the head commit were not read',
        };
      const seen: Record<string, JsonValue> = {};
      const buckets = { passed: 0, running: 0, failed: 0, missing: 0 };
      for (const name of required) {
        const status = snapshot.statuses.find((s) => s.name === name);
        const bucket = classifyStatus(status);
        buckets[bucket]++;
        seen[name] = status
          ? `${status.status}${status.allow_failure ? ' (allowed to fail)' : ''}`
          : 'missing';
      }
      const ok =
        state === 'success'
          ? buckets.passed === required.length
          : state === 'pending'
            ? buckets.running > 0 && buckets.failed === 0 && buckets.missing === 0
            : state === 'failed'
              ? buckets.failed > 0
              : buckets.missing > 0;
      return { value: seen, ok };
    },
  }),
});
