import { defineCondition } from '../engine/define-condition.ts';
import { accessParamsSchema, compileAccess, describeAccess, showAccess } from '../engine/access-levels.ts';

export const authorAccess = defineCondition({
  name: 'author_access',
  summary:
    "The access level of the item's author to its project, read through the members API (a member of the project or of its group, the owner of a user namespace; an active user only): `guest`, `reporter`, `developer`, `master`, `owner`. A bare level means at least that level; `{ at_least: developer }`, `{ below: developer }` (no access at all is below every level). Access through a group the project is shared with, or an administrator's rights, are not visible to the bot: such an author reads as less. See [Members' commands](#members-commands).",
  example: { below: 'developer' },
  params: accessParamsSchema,
  describe: (params) => describeAccess('author_access', params),
  compile: (params) => {
    const test = compileAccess(params);
    return ({ snapshot }) => {
      const level = snapshot.authorAccess;
      // Unknown never acts: a level nobody read is not "no access".
      if (level === undefined)
        return { value: null, ok: false, unknown: true, note: "the author's access was not read" };
      return { value: showAccess(level), ok: test(level) };
    };
  },
});
