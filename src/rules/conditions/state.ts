import { z } from 'zod';
import { defineCondition } from '../engine/define-condition.ts';

const STATES = ['opened', 'closed', 'merged', 'reopened', 'locked'] as const;
const stateName = z.enum(STATES);

export const state = defineCondition({
  name: 'state',
  summary:
    'The state: `opened` (which includes `reopened`, as the server lists them), `closed`, `merged`, `reopened`; or `{ in: [...] }`.',
  example: 'opened',
  params: z.union([stateName, z.strictObject({ in: z.array(stateName).min(1) })]),
  describe: (params) =>
    typeof params === 'string' ? `state is ${params}` : `state is one of [${params.in.join(', ')}]`,
  compile: (params) => {
    const wanted = new Set<string>(typeof params === 'string' ? [params] : params.in);
    // A reopened merge request is open: v3-era servers report it as `reopened` and their
    // `state=opened` filter includes it (scope :opened is with_states(:opened, :reopened)).
    if (wanted.has('opened')) wanted.add('reopened');
    return ({ snapshot }) => ({ value: snapshot.state, ok: wanted.has(snapshot.state) });
  },
});
