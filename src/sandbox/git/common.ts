/** What the sandbox's git code shares with the routes: its errors, and the shapes of paths and names. */

export type GitErrorKind =
  | 'missing-repository'
  | 'missing-branch'
  | 'invalid-branch-name'
  | 'branch-exists'
  | 'invalid-path'
  | 'file-exists'
  | 'file-missing'
  | 'concurrent-update'
  | 'failed';

/** A refused repository operation; `kind` lets the routes answer with the real servers' wording. */
export class GitError extends Error {
  constructor(
    readonly kind: GitErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'GitError';
  }
}

/** The all-zeros sha real servers send as `before` of a new branch and `after` of a deleted one. */
export const NULL_SHA = '0000000000000000000000000000000000000000';

/** Names git could never take as a branch, refused before asking git (and before any option parsing). */
export function validBranchShape(name: string): boolean {
  return name.length > 0 && !name.startsWith('-') && !/[\0\n\r]/.test(name);
}

/** A repository path: no leading slash (real servers drop it), no `.`/`..`/empty parts, no `.git`. */
export function normalisePath(raw: string): string {
  const trimmed = raw.replace(/^\/+/, '');
  const parts = trimmed.split('/');
  if (
    trimmed === '' ||
    /[\0\n\r]/.test(trimmed) ||
    parts.some((p) => p === '' || p === '.' || p === '..' || p.toLowerCase() === '.git')
  )
    throw new GitError('invalid-path', `"${raw}" is not a valid file path`);
  return trimmed;
}

export function parentDirs(filePath: string): string[] {
  const parts = filePath.split('/');
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('/'));
}
