/**
 * Project hooks (docs/api-v3.md#project-hooks), master access and above, as on real 8.x servers.
 * Deliveries are the hook dispatcher's; these routes only keep the records.
 */
import type { Router } from 'express';
import type { SandboxContext } from '../context.ts';
import type { HookRec } from '../db.ts';
import { isHttpUrl } from '../field-errors.ts';
import { HttpError, flag, notFound, requiredStr, sendPage, str } from '../http.ts';
import { MASTER } from '../permissions.ts';
import { removeWhere } from '../remove-project.ts';
import { projectRoute } from '../route.ts';

const EVENT_FLAGS = [
  'push_events',
  'issues_events',
  'merge_requests_events',
  'tag_push_events',
  'note_events',
  'build_events',
  'pipeline_events',
  'enable_ssl_verification',
] as const;

/**
 * docs/api-v3.md#project-hooks samples the flags as the strings `true`; real servers' entity answers booleans, which is
 * what the sandbox answers. The secret `token` is write-only, as on real servers.
 */
export function hookView(hook: HookRec) {
  return {
    id: hook.id,
    url: hook.url,
    project_id: hook.project_id,
    push_events: hook.push_events,
    issues_events: hook.issues_events,
    merge_requests_events: hook.merge_requests_events,
    tag_push_events: hook.tag_push_events,
    note_events: hook.note_events,
    build_events: hook.build_events,
    pipeline_events: hook.pipeline_events,
    enable_ssl_verification: hook.enable_ssl_verification,
    created_at: hook.created_at,
  };
}

/** The URL (required) and whichever flags and token were sent; real servers answer a bad URL 422. */
function readHook(p: Record<string, unknown>): Partial<HookRec> & { url: string } {
  const url = requiredStr(p, 'url');
  if (!isHttpUrl(url)) throw new HttpError(422, { message: 'Invalid url given' });
  const changes: Partial<HookRec> & { url: string } = { url };
  for (const key of EVENT_FLAGS) {
    const value = flag(p, key);
    if (value !== undefined) changes[key] = value;
  }
  const token = str(p, 'token');
  if (token !== undefined) changes.token = token === '' ? null : token;
  return changes;
}

export function registerHookRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;

  const hookOf = (projectId: number, ref: string | undefined) =>
    db.data.hooks.find((h) => h.project_id === projectId && String(h.id) === ref);

  router.get(
    '/projects/:id/hooks',
    projectRoute(db, MASTER, ({ req, res, project }) => {
      sendPage(req, res, db.data.hooks.filter((h) => h.project_id === project.id).map(hookView));
    }),
  );

  router.get(
    '/projects/:id/hooks/:hook_id',
    projectRoute(db, MASTER, ({ req, res, project }) => {
      const hook = hookOf(project.id, String(req.params.hook_id));
      if (!hook) throw notFound();
      res.json(hookView(hook));
    }),
  );

  router.post(
    '/projects/:id/hooks',
    projectRoute(db, MASTER, ({ res, p, project }) => {
      const input = readHook(p);
      // Defaults of real 8.x servers: push events on, every other event off, SSL verified.
      const hook: HookRec = {
        id: db.nextId('hooks'),
        project_id: project.id,
        token: null,
        push_events: true,
        issues_events: false,
        merge_requests_events: false,
        tag_push_events: false,
        note_events: false,
        build_events: false,
        pipeline_events: false,
        enable_ssl_verification: true,
        created_at: db.now(),
        ...input,
      };
      db.data.hooks.push(hook);
      db.changed();
      res.status(201).json(hookView(hook));
    }),
  );

  router.put(
    '/projects/:id/hooks/:hook_id',
    projectRoute(db, MASTER, ({ req, res, p, project }) => {
      const hook = hookOf(project.id, String(req.params.hook_id));
      if (!hook) throw notFound();
      Object.assign(hook, readHook(p));
      db.changed();
      res.json(hookView(hook));
    }),
  );

  router.delete(
    '/projects/:id/hooks/:hook_id',
    projectRoute(db, MASTER, ({ req, res, project }) => {
      const hook = hookOf(project.id, String(req.params.hook_id));
      // docs/api-v3.md#project-hooks: idempotent; the hook when it existed, an empty body otherwise.
      if (!hook) {
        res.status(200).end();
        return;
      }
      removeWhere(db.data.hooks, (h) => h === hook);
      db.changed();
      res.json(hookView(hook));
    }),
  );
}
