/** Git for the bot, seen from outside: bringing a branch up to its target without a working tree (the merge queue), its cache, and the credentials it uses. */
export { type BranchUpdater, type GitCredentials, createBranchUpdater } from './branch-updater.ts';
export { DEFAULT_TRAIN_PREFIX, type PushOutcome } from './train-git-types.ts';
