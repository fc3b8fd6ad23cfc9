import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { projectPathSchema } from '../engine/param-schemas.ts';
import { issueTarget, skip } from '../engine/planned-call.ts';

export const move = defineAction({
  inRepositories: 'operator',
  name: 'move',
  summary:
    'Moves the issue to another project (by path); the server closes the original. Issues only; nothing when it is already there.',
  example: { to: 'support/helpdesk' },
  params: z.strictObject({ to: projectPathSchema }),
  itemKinds: ['issue'],
  describe: (p) => `move to ${p.to}`,
  plan: (p, { snapshot }) => {
    // Paths are case-insensitive on the server.
    if (snapshot.project.path_with_namespace.toLowerCase() === p.to.toLowerCase())
      return skip(`already in ${p.to}`);
    return [
      {
        call: { op: 'issues.move', args: { ...issueTarget(snapshot), to_project: p.to } },
        reason: `move to ${p.to}`,
      },
    ];
  },
});
