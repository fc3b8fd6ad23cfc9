/**
 * A project with a team at every access level and a hook that records deliveries, for the end-to-end
 * tests of issues, notes, labels and merge requests. Deliveries go to the sandbox's own (unknown,
 * 404) URL: the dispatcher records each one in `hooks.recent()` whatever the answer.
 */
import type { CallOptions, CallResult } from './sandbox.ts';
import type { Sandbox } from '../../src/sandbox/server.ts';
import type { HookRec, ProjectRec, UserRec } from '../../src/sandbox/db.ts';
import { addProject, addUser } from '../../src/sandbox/factories.ts';
import { DEVELOPER, GUEST, MASTER, REPORTER } from '../../src/sandbox/permissions.ts';

export type As = <T = any>(method: string, path: string, options?: CallOptions) => Promise<CallResult<T>>;

export interface Member {
  user: UserRec;
  /** Calls the sandbox with this user's private token. */
  as: As;
}

export interface World {
  project: ProjectRec;
  owner: Member;
  master: Member;
  developer: Member;
  reporter: Member;
  guest: Member;
  /** Logged in, not a member. */
  outsider: Member;
  hook: HookRec;
  /** Every delivery to this world's hook so far: `[X-Gitlab-Event, object_attributes.action]`. */
  deliveries(): Promise<[string, unknown][]>;
}

export function memberOf(sb: Sandbox, call: As, user: UserRec): Member {
  return {
    user,
    as: (method, path, options = {}) => call(method, path, { token: user.private_token, ...options }),
  };
}

/** Adds a hook to the project that selects every event and records its deliveries. */
export function recordHooks(sb: Sandbox, project: ProjectRec): HookRec {
  const db = sb.ctx.db;
  const hook: HookRec = {
    id: db.nextId('hooks'),
    project_id: project.id,
    url: `${sb.url}/hook-sink/${project.id}`,
    token: null,
    push_events: true,
    issues_events: true,
    merge_requests_events: true,
    tag_push_events: true,
    note_events: true,
    build_events: true,
    pipeline_events: true,
    enable_ssl_verification: false,
    created_at: db.now(),
  };
  db.data.hooks.push(hook);
  return hook;
}

export async function deliveriesTo(sb: Sandbox, hook: HookRec): Promise<[string, unknown][]> {
  await sb.ctx.hooks.idle();
  return sb.ctx.hooks
    .recent()
    .filter((d) => d.hookId === hook.id)
    .map((d) => [d.event, (d.payload.object_attributes as { action?: unknown } | undefined)?.action]);
}

export async function makeWorld(
  sb: Sandbox,
  call: As,
  prefix: string,
  options: { visibility_level?: 0 | 10 | 20; initialFiles?: Record<string, string> } = {},
): Promise<World> {
  const db = sb.ctx.db;
  const user = (role: string) => addUser(db, { username: `${prefix}-${role}`, name: `${prefix} ${role}` });
  const owner = user('owner');
  const namespace = db.data.namespaces.find((n) => n.kind === 'user' && n.owner_id === owner.id)!;
  const project = await addProject(sb.ctx, {
    name: `${prefix}-project`,
    namespace_id: namespace.id,
    creator_id: owner.id,
    visibility_level: options.visibility_level ?? 0,
    initialFiles: options.initialFiles ?? { 'README.md': '# readme\n' },
  });
  const member = (role: string, level: number) => {
    const u = user(role);
    db.data.members.push({
      project_id: project.id,
      user_id: u.id,
      access_level: level,
      created_at: db.now(),
    });
    return memberOf(sb, call, u);
  };
  const hook = recordHooks(sb, project);
  return {
    project,
    owner: memberOf(sb, call, owner),
    master: member('master', MASTER),
    developer: member('developer', DEVELOPER),
    reporter: member('reporter', REPORTER),
    guest: member('guest', GUEST),
    outsider: memberOf(sb, call, user('outsider')),
    hook,
    deliveries: () => deliveriesTo(sb, hook),
  };
}
