/**
 * What git over HTTP (git-http.ts) and git over SSH (git-ssh.ts) share, so the two transports cannot
 * drift apart: who may fetch or push a project, and what a push goes through and becomes.
 *
 * A push goes through two hooks the sandbox installs for every repository (through `core.hooksPath`,
 * no file inside the repositories): `pre-receive` refuses what 8.x refused (see PRE_RECEIVE), and
 * `post-receive` writes the updated refs to a file the sandbox reads when `receive-pack` is done, then
 * tells `ctx.on.push` about each, exactly as a file commit through the API does: the Push Hook, the
 * project event, the refresh of the merge requests from or into the branch (with its `update` hook
 * and the cancellation of merge-when-build-succeeds on a pushed source branch).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { PushEvent, SandboxContext } from './context.ts';
import { notify } from './context.ts';
import type { ProjectRec, UserRec } from './db.ts';
import { accessLevel, canRead, DEVELOPER, MASTER, pathWithNamespace, REPORTER } from './permissions.ts';
import { canPushToBranch } from './protected-branches.ts';

/**
 * The sandbox's pre-receive: 8.x's checks of each pushed ref (`Gitlab::Checks::ChangeAccess`, in its
 * order), the first refusal refusing the whole push with gitlab-shell's `GitLab: ` prefix. Whoever
 * gets here may push code (the command-level check of decideGitAccess). Tags: only masters change or
 * delete an existing one. Protected branches: nobody force pushes or deletes them; pushing needs the
 * branch's push level (protected-branches.ts), given as the list of protected branches the pusher may
 * push to.
 */
const PRE_RECEIVE = `#!/bin/sh
zero=0000000000000000000000000000000000000000
nl='
'
# Whether $1 is a line of $2 (the shell's own matching: a hook starts no process of its own).
listed() { case "$nl$2$nl" in *"$nl$1$nl"*) return 0 ;; esac; return 1; }
refuse() { echo "GitLab: $1"; while read -r _; do :; done; exit 1; }
while read -r old new ref; do
  case "$ref" in
  refs/tags/*)
    if [ "$old" != "$zero" ] && [ "$SANDBOX_CHANGE_TAGS" != 1 ]; then
      refuse "You are not allowed to change existing tags on this project."
    fi
    ;;
  refs/heads/*)
    branch=\${ref#refs/heads/}
    listed "$branch" "$SANDBOX_PROTECTED" || continue
    if [ "$old" != "$zero" ] && [ "$new" != "$zero" ] && ! git merge-base --is-ancestor "$old" "$new"; then
      refuse "You are not allowed to force push code to a protected branch on this project."
    fi
    if [ "$new" = "$zero" ]; then
      refuse "You are not allowed to delete protected branches from this project."
    fi
    if ! listed "$branch" "$SANDBOX_PROTECTED_PUSH"; then
      refuse "You are not allowed to push code to protected branches on this project."
    fi
    ;;
  esac
done
exit 0
`;

const POST_RECEIVE = `#!/bin/sh
# The sandbox's post-receive: the updated refs, for the sandbox to turn into push events.
while read -r line; do printf '%s\\n' "$line"; done >> "$SANDBOX_PUSH_LOG"
`;

export type GitService = 'git-upload-pack' | 'git-receive-pack';

/** A project by `namespace/path` (case-insensitive, as real servers resolve clone URLs). */
export function projectByPath(ctx: SandboxContext, fullPath: string): ProjectRec | undefined {
  const full = fullPath.toLowerCase();
  return ctx.db.data.projects.find((p) => pathWithNamespace(ctx.db, p).toLowerCase() === full);
}

/**
 * Whether `user` (undefined: anonymous) may run `service` on `project` (undefined: no such path).
 * `anonymous`: credentials would change the answer (HTTP asks for them with 401). The messages are
 * the real servers' words, without gitlab-shell's `GitLab: ` prefix.
 */
export type GitDecision =
  | { allowed: true; project: ProjectRec; level: number }
  | { allowed: false; why: 'anonymous' | 'not-found' | 'forbidden'; message: string };

const NOT_FOUND = 'The project you were looking for could not be found.';

export function decideGitAccess(
  ctx: SandboxContext,
  project: ProjectRec | undefined,
  user: UserRec | undefined,
  service: GitService,
  options: { readOnly?: boolean } = {},
): GitDecision {
  const anonymous = { allowed: false, why: 'anonymous', message: 'Access denied' } as const;
  const visible =
    project !== undefined && (user ? canRead(ctx.db, project, user) : project.visibility_level === 20);
  if (!project || !visible)
    return user ? { allowed: false, why: 'not-found', message: NOT_FOUND } : anonymous;
  const level = user ? accessLevel(ctx.db, project, user) : 0;
  if (service === 'git-upload-pack') {
    if (project.visibility_level === 0 && level < REPORTER)
      return {
        allowed: false,
        why: 'forbidden',
        message: 'You are not allowed to download code from this project.',
      };
  } else {
    if (!user) return anonymous;
    if (options.readOnly || level < DEVELOPER || project.archived)
      return {
        allowed: false,
        why: 'forbidden',
        message: 'You are not allowed to push code to this project.',
      };
  }
  return { allowed: true, project, level };
}

/** Writes the two hooks into `<workDir>/hooks` and answers that folder (for `core.hooksPath`). */
export async function installPushHooks(workDir: string): Promise<string> {
  const hooksDir = path.join(workDir, 'hooks');
  await mkdir(hooksDir, { recursive: true });
  await writeFile(path.join(hooksDir, 'pre-receive'), PRE_RECEIVE, { mode: 0o755 });
  await writeFile(path.join(hooksDir, 'post-receive'), POST_RECEIVE, { mode: 0o755 });
  return hooksDir;
}

export interface GitServiceRun {
  /** The environment of `git upload-pack`, `receive-pack` or `http-backend` (plus the caller's own). */
  env: Record<string, string>;
  /**
   * After the git process ended (at `receivedAt`, `performance.now()`): each ref it updated becomes a
   * push event; the push log goes.
   */
  finish(receivedAt?: number): Promise<void>;
}

/**
 * The environment one git service process runs in, and what happens after it: the hooks, the
 * protected branches and whether the caller may push to them, and the push log to read back.
 * `config` adds the transport's own settings (HTTP's `http.receivepack`).
 */
export function gitServiceRun(
  ctx: SandboxContext,
  dirs: { workDir: string; hooksDir: string },
  access: { project: ProjectRec; user: UserRec | undefined; level: number },
  config: [string, string][] = [],
): GitServiceRun {
  const { project, user, level } = access;
  const pushLog = path.join(dirs.workDir, `push-${randomBytes(8).toString('hex')}.log`);
  const protectedNames = ctx.db.data.protectedBranches
    .filter((b) => b.project_id === project.id)
    .map((b) => b.name);
  const mayPush = user ? protectedNames.filter((name) => canPushToBranch(ctx.db, project, user, name)) : [];
  const settings: [string, string][] = [
    ...config,
    ['core.hooksPath', dirs.hooksDir],
    ['gc.auto', '0'],
    // No `git gc --auto` process after each push (it would do nothing with gc.auto=0 anyway).
    ['receive.autogc', 'false'],
    ['receive.advertisePushOptions', 'false'],
  ];
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: dirs.workDir,
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_COUNT: String(settings.length),
    SANDBOX_PROTECTED: protectedNames.join('\n'),
    SANDBOX_PROTECTED_PUSH: mayPush.join('\n'),
    // 8.x `admin_project`: masters and up (administrators count as owners).
    SANDBOX_CHANGE_TAGS: level >= MASTER ? '1' : '0',
    SANDBOX_PUSH_LOG: pushLog,
    GIT_COMMITTER_NAME: user?.name ?? 'Sandbox',
    GIT_COMMITTER_EMAIL: user?.email ?? 'sandbox@localhost',
  };
  settings.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return {
    env,
    async finish(receivedAt) {
      let lines: string;
      try {
        lines = await readFile(pushLog, 'utf8');
      } catch {
        return; // nothing was pushed (a fetch, or a refused push)
      }
      try {
        if (!user) return;
        const events: PushEvent[] = lines.split('\n').flatMap((line) => {
          const [before, after, ref] = line.trim().split(' ');
          if (!before || !after || !ref) return [];
          return [{ project, ref, before, after, user, ...(receivedAt !== undefined ? { receivedAt } : {}) }];
        });
        for (const event of events)
          for (const listener of ctx.on.pushTaken ?? [])
            try {
              listener(event);
            } catch (error) {
              console.error('sandbox: listener failed', error);
            }
        for (const event of events) await notify(ctx.on.push, event);
      } finally {
        await rm(pushLog, { force: true });
      }
    },
  };
}

/**
 * A push's consequences, after its answer, as 8.x runs them (gitlab-shell's post-receive queues
 * `PostReceive`, a background job): in push order per project; `pushWorkIdle` waits for all of them.
 */
const pushWork = new WeakMap<
  SandboxContext,
  { chains: Map<number, Promise<void>>; pending: Set<Promise<void>> }
>();

export function afterPush(ctx: SandboxContext, projectId: number, work: () => Promise<void>): void {
  let state = pushWork.get(ctx);
  if (!state) pushWork.set(ctx, (state = { chains: new Map(), pending: new Set() }));
  const { chains, pending } = state;
  // A failure is said where the sandbox's other background failures are (its own output); the
  // next push's consequences still run.
  const done = (chains.get(projectId) ?? Promise.resolve())
    .then(work)
    .catch((error: unknown) => console.error("sandbox: a push's consequences failed", error));
  chains.set(projectId, done);
  pending.add(done);
  void done.then(() => {
    pending.delete(done);
    if (chains.get(projectId) === done) chains.delete(projectId);
  });
}

/** Resolves once no push's consequences are left to run. */
export async function pushWorkIdle(ctx: SandboxContext): Promise<void> {
  const pending = pushWork.get(ctx)?.pending;
  while (pending && pending.size > 0) await Promise.allSettled([...pending]);
}
