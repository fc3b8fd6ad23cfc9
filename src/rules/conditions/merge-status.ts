import { z } from 'zod';
import { defineCondition, MERGE_REQUESTS_ONLY } from '../engine/define-condition.ts';

const STATUSES = ['can_be_merged', 'cannot_be_merged', 'unchecked'] as const;
const statusName = z.enum(STATUSES);

export const mergeStatus = defineCondition({
  name: 'merge_status',
  summary:
    'Whether the server found the merge request mergeable: `can_be_merged`, `cannot_be_merged` (conflicts), `unchecked`; or `{ in: [...] }`.',
  example: 'can_be_merged',
  params: z.union([statusName, z.strictObject({ in: z.array(statusName).min(1) })]),
  itemKinds: MERGE_REQUESTS_ONLY,
  describe: (p) =>
    typeof p === 'string' ? `merge_status is ${p}` : `merge_status is one of [${p.in.join(', ')}]`,
  compile: (p) => {
    const wanted = new Set<string>(typeof p === 'string' ? [p] : p.in);
    return ({ snapshot }) => {
      const value = snapshot.kind === 'merge_request' ? snapshot.merge_status : null;
      return { value, ok: value !== null && wanted.has(value) };
    };
  },
});
