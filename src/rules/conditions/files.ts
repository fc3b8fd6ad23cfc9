import picomatch from 'picomatch';
import { z } from 'zod';
import { defineCondition, MERGE_REQUESTS_ONLY } from '../engine/define-condition.ts';
import { globSchema } from '../engine/param-schemas.ts';

const globs = z.array(globSchema).min(1);

export const files = defineCondition({
  name: 'files',
  summary:
    'The paths the merge request changes, against globs: `any_match` (some file matches), `all_match` (every file matches one), `none_match` (no file matches). Unknown when the changes were not read.',
  example: { any_match: ['src/**'], none_match: ['**/*.lock'] },
  params: z
    .strictObject({ any_match: globs.optional(), all_match: globs.optional(), none_match: globs.optional() })
    .refine((p) => p.any_match !== undefined || p.all_match !== undefined || p.none_match !== undefined, {
      message: 'give at least one of any_match, all_match, none_match',
      when: (payload) => payload.issues.length === 0,
    }),
  itemKinds: MERGE_REQUESTS_ONLY,
  describe: (p) => {
    const parts: string[] = [];
    if (p.any_match) parts.push(`some match [${p.any_match.join(', ')}]`);
    if (p.all_match) parts.push(`all match [${p.all_match.join(', ')}]`);
    if (p.none_match) parts.push(`none match [${p.none_match.join(', ')}]`);
    return `changed files: ${parts.join(' and ')}`;
  },
  compile: (p) => {
    // `dot: true`: a change to `.gitlab-ci.yml` or `src/.env` is a change like any other.
    const compile = (list: string[] | undefined) => (list ? picomatch(list, { dot: true }) : undefined);
    const anyMatch = compile(p.any_match);
    const allMatch = compile(p.all_match);
    const noneMatch = compile(p.none_match);
    return ({ snapshot, changedFilesShown }) => {
      const paths = snapshot.kind === 'merge_request' ? snapshot.changedFiles : null;
      if (paths === null)
        return { value: null, ok: false, unknown: true, note: 'the changed files were not read' };
      const ok =
        (!anyMatch || paths.some((path) => anyMatch(path))) &&
        (!allMatch || paths.every((path) => allMatch(path))) &&
        (!noneMatch || !paths.some((path) => noneMatch(path)));
      return { value: changedFilesShown, ok };
    };
  },
});
