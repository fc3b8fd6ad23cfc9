/** PLACEHOLDER: the real git repositories are being written (issue 3). */
import type { GitRepos } from './context.ts';

export function createGitRepos(_dir: string): GitRepos {
  const fail = (): never => {
    throw new Error('git repositories not implemented yet');
  };
  return {
    create: async () => undefined,
    remove: async () => undefined,
    fork: async () => undefined,
    branches: async () => [],
    branch: async () => undefined,
    createBranch: async () => undefined,
    deleteBranch: async () => undefined,
    commitFile: async () => fail(),
    log: async () => [],
    commit: async () => undefined,
    diff: async () => [],
    compare: async () => ({ commits: [], diffs: [], mergeBase: undefined }),
    canMerge: async () => false,
    merge: async () => fail(),
    resolve: async () => undefined,
  };
}
