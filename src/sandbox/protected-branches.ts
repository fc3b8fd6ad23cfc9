/**
 * Protected branches as 8.x servers keep and judge them (`ProtectedBranch` with its push and merge
 * access levels, `Gitlab::UserAccess`), shared by the API (file commits, merges, the branch views) and
 * by git pushes (git-access.ts):
 *
 * - a protected branch lets masters push and merge, and developers too when its
 *   `developers_can_push` / `developers_can_merge` says so; administrators always; nobody may force
 *   push it or delete it (8.x grants those two abilities to no role);
 * - an unprotected branch takes pushes and merges from whoever may push code to the project
 *   (developers and up, never into an archived project);
 * - the default branch is protected at its first push when `application_settings.default_branch_protection`
 *   asks for it (8.x `GitPushService#process_default_branch`).
 */
import type { PushEvent, SandboxContext } from './context.ts';
import type { Db, ProjectRec, ProtectedBranchRec, UserRec } from './db.ts';
import { accessLevel, DEVELOPER, MASTER } from './permissions.ts';

/** `application_settings.default_branch_protection` (8.x `Gitlab::Access`; 2 is full protection). */
const PROTECTION_NONE = 0;
const PROTECTION_DEV_CAN_PUSH = 1;
const PROTECTION_DEV_CAN_MERGE = 3;

const NULL_SHA = '0000000000000000000000000000000000000000';

export function protectedBranch(db: Db, projectId: number, name: string): ProtectedBranchRec | undefined {
  return db.data.protectedBranches.find((b) => b.project_id === projectId && b.name === name);
}

export function isProtectedBranch(db: Db, projectId: number, name: string): boolean {
  return protectedBranch(db, projectId, name) !== undefined;
}

/** 8.x `push_code`: developers and up, never into an archived project. */
export function canPushCode(db: Db, project: ProjectRec, user: UserRec): boolean {
  return accessLevel(db, project, user) >= DEVELOPER && !project.archived;
}

/** 8.x `ProtectedBranchAccess#check_access`: administrators, or a role at least the level's. */
function reaches(db: Db, project: ProjectRec, user: UserRec, developersToo: boolean | undefined): boolean {
  return user.is_admin || accessLevel(db, project, user) >= (developersToo ? DEVELOPER : MASTER);
}

/** 8.x `UserAccess#can_push_to_branch?` (a fast-forward; force pushes and deletions are refused apart). */
export function canPushToBranch(db: Db, project: ProjectRec, user: UserRec, branch: string): boolean {
  const rec = protectedBranch(db, project.id, branch);
  if (!rec) return canPushCode(db, project, user);
  return reaches(db, project, user, rec.developers_can_push);
}

/** 8.x `UserAccess#can_merge_to_branch?`. */
export function canMergeToBranch(db: Db, project: ProjectRec, user: UserRec, branch: string): boolean {
  const rec = protectedBranch(db, project.id, branch);
  if (!rec) return canPushCode(db, project, user);
  return reaches(db, project, user, rec.developers_can_merge);
}

/**
 * `PUT .../branches/:branch/protect` (8.x `ProtectedBranches::ApiCreateService` / `ApiUpdateService`):
 * a new protection takes what is given (masters only when a flag is absent or false); an existing one
 * changes only the flags given.
 */
export function protectBranch(
  db: Db,
  projectId: number,
  name: string,
  flags: { developers_can_push?: boolean; developers_can_merge?: boolean },
): void {
  const existing = protectedBranch(db, projectId, name);
  if (existing) {
    if (flags.developers_can_push !== undefined) existing.developers_can_push = flags.developers_can_push;
    if (flags.developers_can_merge !== undefined) existing.developers_can_merge = flags.developers_can_merge;
  } else
    db.data.protectedBranches.push({
      project_id: projectId,
      name,
      developers_can_push: flags.developers_can_push ?? false,
      developers_can_merge: flags.developers_can_merge ?? false,
    });
  db.changed();
}

export function unprotectBranch(db: Db, projectId: number, name: string): void {
  db.data.protectedBranches = db.data.protectedBranches.filter(
    (b) => !(b.project_id === projectId && b.name === name),
  );
  db.changed();
}

/**
 * The first push of the default branch (a git push, a file commit into an empty repository, a branch
 * made through the API) protects it as the settings say, unless it is protected already: 1 lets
 * developers push (not merge), 2 lets masters only, 3 lets developers merge (not push), 0 protects
 * nothing. Repositories the sandbox makes with files (the demo seed, test worlds) were never pushed:
 * their default branch is left as it is.
 */
export function protectDefaultBranchOnFirstPush(ctx: SandboxContext, push: PushEvent): void {
  const { project } = push;
  if (push.ref !== `refs/heads/${project.default_branch}`) return;
  if (push.before !== NULL_SHA || push.after === NULL_SHA) return;
  const level = ctx.db.data.settings.default_branch_protection;
  if (level === PROTECTION_NONE || isProtectedBranch(ctx.db, project.id, project.default_branch)) return;
  protectBranch(ctx.db, project.id, project.default_branch, {
    developers_can_push: level === PROTECTION_DEV_CAN_PUSH,
    developers_can_merge: level === PROTECTION_DEV_CAN_MERGE,
  });
}
