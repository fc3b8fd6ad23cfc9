/**
 * The prologue every sandbox route shares, written once: who calls (401 without a caller), the merged
 * query and body parameters, and for routes under `/projects/:id` the project (404 when absent or
 * invisible to the caller) and the access the route needs (403 below it). A handler receives all of it
 * as one `call` and starts with what is particular to it.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Caller } from './context.ts';
import type { Db, ProjectRec } from './db.ts';
import { caller, handle, params } from './http.ts';
import { accessLevel, findProject, requireAdmin, requireLevel } from './permissions.ts';

export interface RouteCall {
  req: Request;
  res: Response;
  /** The authenticated caller, after sudo. */
  who: Caller;
  /** Query and body parameters merged (body wins), as the real servers read them. */
  p: Record<string, unknown>;
}

export interface ProjectRouteCall extends RouteCall {
  /** The project named by `:id` (an integer id or `namespace%2Fpath`), visible to the caller. */
  project: ProjectRec;
  /** The caller's effective access level on the project (read when first used). */
  readonly level: number;
}

/**
 * What a project route needs beyond seeing the project: `'visible'` (nothing more), a minimum access
 * level (`DEVELOPER`, `MASTER`, ...), a check that throws the route's own refusal, or `'admin'`: an
 * administrator, checked before the project is looked up (403 before 404, as the real servers'
 * `authenticated_as_admin!` comes first).
 */
export type Need = 'visible' | 'admin' | number | ((db: Db, project: ProjectRec, who: Caller) => void);

function routeCall(req: Request, res: Response): RouteCall {
  return { req, res, who: caller(res), p: params(req) };
}

/** A route any authenticated caller may use. */
export function route(fn: (call: RouteCall) => unknown): RequestHandler {
  return handle((req, res) => fn(routeCall(req, res)));
}

/** A route for administrators only (403 for everyone else). */
export function adminRoute(fn: (call: RouteCall) => unknown): RequestHandler {
  return handle((req, res) => {
    const call = routeCall(req, res);
    requireAdmin(call.who);
    return fn(call);
  });
}

/** The project prologue on its own, for routes that find their project elsewhere than `:id`. */
export function projectCall(db: Db, call: RouteCall, ref: string, need: Need): ProjectRouteCall {
  if (need === 'admin') requireAdmin(call.who);
  const project = findProject(db, ref, call.who);
  if (typeof need === 'number') requireLevel(db, project, call.who, need);
  else if (typeof need === 'function') need(db, project, call.who);
  let level: number | undefined;
  return {
    ...call,
    project,
    get level() {
      return (level ??= accessLevel(db, project, call.who.user));
    },
  };
}

/** A route under `/projects/:id`: the project is found and the caller's access checked before `fn` runs. */
export function projectRoute(db: Db, need: Need, fn: (call: ProjectRouteCall) => unknown): RequestHandler {
  return handle((req, res) => fn(projectCall(db, routeCall(req, res), String(req.params.id), need)));
}
