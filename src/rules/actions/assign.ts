import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { usernameSchema } from '../engine/param-schemas.ts';
import { skip } from '../engine/planned-call.ts';
import { assignCall } from '../engine/build-calls.ts';

export const assign = defineAction({
  inRepositories: 'allowed',
  name: 'assign',
  summary: 'Assigns the item to a user, by username; nothing when that user is already the assignee.',
  example: { to: 'alice' },
  params: z.strictObject({ to: usernameSchema }),
  describe: (p) => `assign to @${p.to}`,
  plan: (p, { snapshot }) => {
    if (snapshot.assignee?.username.toLowerCase() === p.to.toLowerCase())
      return skip(`already assigned to @${snapshot.assignee.username}`);
    return [{ call: assignCall(snapshot, p.to), reason: `assign to @${p.to}` }];
  },
});
