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
  plan: (p, { snapshot }, { fromRepository }) => {
    // Paths are case-insensitive on the server.
    if (snapshot.project.path_with_namespace.toLowerCase() === p.to.toLowerCase())
      return skip(`already in ${p.to}`);
    // A confidential issue is readable by the project's reporters and up (and its author and
    // assignee); moved, by the other project's. A project's own rules, written by its developers,
    // may not hand it to readers the project does not have: only the operator's rules move it.
    if (fromRepository && snapshot.kind === 'issue' && snapshot.confidential === true)
      return skip(
        `a confidential issue is not moved by a project's own .hookbot.yml: it could reach readers of ${p.to} who may not read it here (the operator's rules may move it)`,
      );
    return [
      {
        call: { op: 'issues.move', args: { ...issueTarget(snapshot), to_project: p.to } },
        reason: `move to ${p.to}`,
      },
    ];
  },
});
