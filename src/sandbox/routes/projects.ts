/**
 * Projects (docs/api-v3.md#projects): lists and search, read, the activity feed, create (also for
 * another user), edit, fork and fork relations, star, archive, remove and uploads. Where docs/api-v3.md#projects
 * is silent the answers follow the real 8.x servers' lib/api/projects.rb.
 */
import { randomBytes } from 'node:crypto';
import type { NextFunction, Request, Response, Router } from 'express';
import multer from 'multer';
import type { SandboxContext } from '../context.ts';
import type { NamespaceRec, ProjectRec, UserRec } from '../db.ts';
import { eventView, recordEvent } from '../events.ts';
import { addProject, ensureUserNamespace, projectPathFromName } from '../factories.ts';
import { FieldErrors } from '../field-errors.ts';
import {
  HttpError,
  badRequest,
  flag,
  missing,
  notFound,
  params,
  requiredStr,
  sendPage,
  str,
} from '../http.ts';
import { GUEST, MASTER, OWNER, REPORTER, accessLevel, canRead, requireLevel } from '../permissions.ts';
import { projectView } from '../project-view.ts';
import { removeProject } from '../remove-project.ts';
import { canCreateProject } from '../user-view.ts';
import { adminRoute, projectRoute, route } from '../route.ts';

type Visibility = 0 | 10 | 20;

/** Real servers' project name and path rules, with their messages. */
const NAME = /^[\p{L}\p{N}_][\p{L}\p{N}\p{Pd}_. ]*$/u;
const NAME_MESSAGE =
  "can contain only letters, digits, '_', '.', dash and space. It must start with letter, digit or '_'.";
const PATH = /^[a-zA-Z0-9_.][a-zA-Z0-9_.-]*$/;
const PATH_MESSAGE =
  "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', end in '.git' or end in '.atom'";
const TAKEN = 'has already been taken';

const FLAGS = [
  'issues_enabled',
  'merge_requests_enabled',
  'builds_enabled',
  'wiki_enabled',
  'snippets_enabled',
  'public_builds',
  'shared_runners_enabled',
] as const;

interface ProjectAttrs {
  name?: string;
  path?: string;
  description?: string;
  default_branch?: string;
  import_url?: string;
  visibility_level?: Visibility;
  issues_enabled?: boolean;
  merge_requests_enabled?: boolean;
  builds_enabled?: boolean;
  wiki_enabled?: boolean;
  snippets_enabled?: boolean;
  public_builds?: boolean;
  shared_runners_enabled?: boolean;
}

const LEVEL_NAMES: Record<number, string> = { 0: 'Private', 10: 'Internal', 20: 'Public' };

function readAttrs(p: Record<string, unknown>, errors: FieldErrors, keys: readonly string[]): ProjectAttrs {
  const attrs: ProjectAttrs = {};
  for (const key of ['name', 'path', 'description', 'default_branch', 'import_url'] as const) {
    if (!keys.includes(key)) continue;
    const value = str(p, key);
    if (value !== undefined) attrs[key] = value;
  }
  for (const key of FLAGS) {
    const value = flag(p, key);
    if (value !== undefined) attrs[key] = value;
  }
  const level = p.visibility_level;
  if (level !== undefined && level !== null && level !== '') {
    const n = Number(level);
    if (n === 0 || n === 10 || n === 20) attrs.visibility_level = n;
    else errors.add('visibility_level', 'is not included in the list');
  } else {
    // `public` only counts when `visibility_level` is absent; false means private (the conservative
    // reading real servers chose, since not public could also be internal).
    const publik = flag(p, 'public');
    if (publik !== undefined) attrs.visibility_level = publik ? 20 : 0;
  }
  return attrs;
}

/** Settings restrict levels with codes 0/1/2 (docs/api-v3.md#settings-object); admins are not bound by them. */
function checkVisibilityAllowed(
  ctx: SandboxContext,
  user: UserRec,
  level: number | undefined,
  errors: FieldErrors,
) {
  const restricted = ctx.db.data.settings.restricted_visibility_levels;
  if (level === undefined || user.is_admin || !restricted?.includes(level / 10)) return;
  errors.add(
    'visibility_level',
    `${LEVEL_NAMES[level]} visibility has been restricted by the administrator.`,
  );
}

function validateNames(
  ctx: SandboxContext,
  errors: FieldErrors,
  namespaceId: number,
  name: string | undefined,
  path: string | undefined,
  self?: ProjectRec,
): void {
  const siblings = ctx.db.data.projects.filter((p) => p.namespace_id === namespaceId && p !== self);
  if (name !== undefined) {
    if (name.trim() === '') errors.add('name', "can't be blank");
    else if (!NAME.test(name)) errors.add('name', NAME_MESSAGE);
    errors.maxLength('name', name, 255);
    if (siblings.some((p) => p.name.toLowerCase() === name.toLowerCase())) errors.add('name', TAKEN);
  }
  if (path !== undefined) {
    if (path === '') errors.add('path', "can't be blank");
    else if (!PATH.test(path) || /\.(git|atom)$/.test(path)) errors.add('path', PATH_MESSAGE);
    errors.maxLength('path', path, 255);
    if (siblings.some((p) => p.path.toLowerCase() === path.toLowerCase())) errors.add('path', TAKEN);
  }
}

function limitMessage(user: UserRec): string {
  return user.projects_limit === 0
    ? 'Personal project creation is not allowed. Please contact your administrator with questions'
    : `Your project limit is ${user.projects_limit} projects! Please contact your administrator to increase it`;
}

function takenOnly(errors: FieldErrors): boolean {
  return ['name', 'path'].some((f) => errors.fields[f]?.includes(TAKEN));
}

/** May `user` create projects in `ns`: their own namespace, or a group where they are master or above. */
function canCreateIn(ctx: SandboxContext, user: UserRec, ns: NamespaceRec): boolean {
  if (user.is_admin) return true;
  if (ns.kind === 'user') return ns.owner_id === user.id;
  const gm = ctx.db.data.groupMembers.find((m) => m.group_id === ns.id && m.user_id === user.id);
  return (gm?.access_level ?? 0) >= MASTER;
}

/**
 * Creates the project the way real servers' CreateService does: in a user namespace the creator
 * also becomes a master member, and a `created` event is recorded.
 */
async function createProject(
  ctx: SandboxContext,
  creator: UserRec,
  ns: NamespaceRec,
  attrs: ProjectAttrs & { name: string; path: string },
  forkedFrom?: ProjectRec,
): Promise<ProjectRec> {
  const settingsLevel = ctx.db.data.settings.default_project_visibility;
  const project = await addProject(ctx, {
    ...attrs,
    namespace_id: ns.id,
    creator_id: creator.id,
    visibility_level: attrs.visibility_level ?? ((settingsLevel * 10) as Visibility),
    forked_from_id: forkedFrom?.id ?? null,
  });
  if (attrs.shared_runners_enabled !== undefined)
    project.shared_runners_enabled = attrs.shared_runners_enabled;
  if (ns.kind === 'user')
    ctx.db.data.members.push({
      project_id: project.id,
      user_id: creator.id,
      access_level: MASTER,
      created_at: ctx.db.now(),
    });
  recordEvent(ctx.db, { project_id: project.id, author_id: creator.id, action_name: 'created' });
  ctx.db.changed();
  return project;
}

/** The level a user holds through membership alone (admins see every project, but are members of few). */
function memberLevel(ctx: SandboxContext, project: ProjectRec, user: UserRec): number {
  return accessLevel(ctx.db, project, { ...user, is_admin: false });
}

const ORDER_FIELDS = ['id', 'name', 'path', 'created_at', 'updated_at', 'last_activity_at'] as const;
const VISIBILITIES: Record<string, Visibility> = { private: 0, internal: 10, public: 20 };

/** The filters and order docs/api-v3.md#projects lists for every project list (default created_at, desc). */
function filterProjects(
  ctx: SandboxContext,
  req: Request,
  projects: ProjectRec[],
  orderFields: readonly string[],
) {
  const p = params(req);
  const archived = flag(p, 'archived');
  const visibility = VISIBILITIES[str(p, 'visibility') ?? ''];
  const search = str(p, 'search')?.toLowerCase();
  let list = projects;
  if (archived !== undefined) list = list.filter((x) => x.archived === archived);
  if (visibility !== undefined) list = list.filter((x) => x.visibility_level === visibility);
  if (search) {
    // Real servers match name, path, namespace name and description.
    list = list.filter((x) => {
      const ns = ctx.db.data.namespaces.find((n) => n.id === x.namespace_id);
      return [x.name, x.path, ns?.name ?? '', x.description ?? ''].some((t) =>
        t.toLowerCase().includes(search),
      );
    });
  }
  return sortProjects(req, list, orderFields);
}

function sortProjects(req: Request, projects: ProjectRec[], orderFields: readonly string[]): ProjectRec[] {
  const p = params(req);
  const requested = str(p, 'order_by') ?? '';
  const orderBy = orderFields.includes(requested) ? requested : 'created_at';
  const direction = str(p, 'sort') === 'asc' ? 1 : -1;
  // Projects keep no updated_at of their own: their last activity is the nearest thing.
  const key = (x: ProjectRec): string | number =>
    orderBy === 'updated_at' ? x.last_activity_at : (x[orderBy as keyof ProjectRec] as string | number);
  return [...projects].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    const c = ka < kb ? -1 : ka > kb ? 1 : a.id - b.id;
    return c * direction;
  });
}

function sendProjects(
  ctx: SandboxContext,
  req: Request,
  res: Response,
  user: UserRec,
  projects: ProjectRec[],
  withAccess: boolean,
) {
  sendPage(
    req,
    res,
    projects.map((x) => projectView(ctx, x, user, { withAccess })),
  );
}

/**
 * The fork relation answers: the forked-project link as real servers show it. The sandbox keeps the
 * relation on the project (`forked_from_id`), not as a record of its own, so the fork's id stands in
 * for the link's and the timestamps are the answer's.
 */
function forkLinkView(ctx: SandboxContext, project: ProjectRec, fromId: number) {
  const now = ctx.db.now();
  return {
    id: project.id,
    forked_to_project_id: project.id,
    forked_from_project_id: fromId,
    created_at: now,
    updated_at: now,
  };
}

// ---- uploads ----

const IMAGE = /\.(png|jpe?g|gif|bmp|tiff|ico)$/i;

/** Multipart field `file` in memory, limited to `max_attachment_size` MB; multer's errors become 400s. */
function uploadMiddleware(ctx: SandboxContext) {
  return (req: Request, res: Response, next: NextFunction) => {
    const maxMb = ctx.db.data.settings.max_attachment_size;
    const upload = multer({
      storage: multer.memoryStorage(),
      limits: { fileSize: maxMb * 1024 * 1024, files: 1 },
    });
    upload.single('file')(req, res, (error: unknown) => {
      if (!error) return next();
      if (error instanceof multer.MulterError && error.code === 'LIMIT_FILE_SIZE')
        return next(badRequest({ file: [`is too big (should be at most ${maxMb} MB)`] }));
      if (error instanceof multer.MulterError) return next(badRequest(`400 (Bad request) ${error.message}`));
      next(error);
    });
  };
}

export function registerProjectRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;

  router.get(
    '/projects',
    route(({ req, res, who: { user } }) => {
      // Real servers list the caller's authorized projects: those they are a member of, however.
      const mine = db.data.projects.filter((x) => memberLevel(ctx, x, user) >= GUEST);
      sendProjects(ctx, req, res, user, filterProjects(ctx, req, mine, ORDER_FIELDS), true);
    }),
  );

  router.get(
    '/projects/owned',
    route(({ req, res, who: { user } }) => {
      const owned = new Set(
        db.data.namespaces
          .filter(
            (n) =>
              (n.kind === 'user' && n.owner_id === user.id) ||
              (n.kind === 'group' &&
                db.data.groupMembers.some(
                  (m) => m.group_id === n.id && m.user_id === user.id && m.access_level >= OWNER,
                )),
          )
          .map((n) => n.id),
      );
      const projects = db.data.projects.filter((x) => owned.has(x.namespace_id));
      sendProjects(ctx, req, res, user, filterProjects(ctx, req, projects, ORDER_FIELDS), true);
    }),
  );

  router.get(
    '/projects/starred',
    route(({ req, res, who: { user } }) => {
      const starred = new Set(db.data.stars.filter((s) => s.user_id === user.id).map((s) => s.project_id));
      const projects = db.data.projects.filter((x) => starred.has(x.id) && canRead(db, x, user));
      // Real servers answer this list without `permissions`.
      sendProjects(ctx, req, res, user, filterProjects(ctx, req, projects, ORDER_FIELDS), false);
    }),
  );

  router.get(
    '/projects/all',
    adminRoute(({ req, res, who: c }) => {
      sendProjects(ctx, req, res, c.user, filterProjects(ctx, req, db.data.projects, ORDER_FIELDS), true);
    }),
  );

  router.get(
    '/projects/search/:query',
    route(({ req, res, who: { user } }) => {
      // docs/api-v3.md#projects: text contained in the name, among the projects the caller can see.
      const query = String(req.params.query).toLowerCase();
      const found = db.data.projects.filter(
        (x) => canRead(db, x, user) && x.name.toLowerCase().includes(query),
      );
      const order = ['id', 'name', 'created_at', 'last_activity_at'];
      sendProjects(ctx, req, res, user, sortProjects(req, found, order), false);
    }),
  );

  router.get(
    '/projects/:id',
    projectRoute(db, 'visible', ({ res, who: c, project }) => {
      res.json(projectView(ctx, project, c.user, { withAccess: true }));
    }),
  );

  router.get(
    '/projects/:id/events',
    projectRoute(db, 'visible', ({ req, res, project }) => {
      const events = db.data.events.filter((e) => e.project_id === project.id).sort((a, b) => b.id - a.id);
      sendPage(
        req,
        res,
        events.map((e) => eventView(ctx, e)),
      );
    }),
  );

  router.post(
    '/projects',
    route(async ({ res, who: { user }, p }) => {
      const name = requiredStr(p, 'name');
      const errors = new FieldErrors();
      const attrs = readAttrs(p, errors, ['name', 'path', 'description', 'import_url']);
      let ns: NamespaceRec;
      const nsRef = p.namespace_id;
      if (nsRef !== undefined && nsRef !== null && nsRef !== '') {
        const found = db.data.namespaces.find((n) => String(n.id) === String(nsRef));
        if (!found || !canCreateIn(ctx, user, found)) throw badRequest({ namespace: ['is not valid'] });
        ns = found;
      } else ns = ensureUserNamespace(db, user);
      // Real servers answer the project limit with 403 and the messages as an array.
      if (ns.kind === 'user' && !canCreateProject(ctx, user))
        throw new HttpError(403, { message: [limitMessage(user)] });
      const path = attrs.path ?? projectPathFromName(name);
      validateNames(ctx, errors, ns.id, name, path);
      checkVisibilityAllowed(ctx, user, attrs.visibility_level, errors);
      // The status table of docs/api-v3.md#errors: 409 for a project with an existing name (real 8.x answers 400 with
      // the same per-field body).
      if (takenOnly(errors)) throw new HttpError(409, { message: errors.fields });
      errors.throwIfAny();
      const project = await createProject(ctx, user, ns, { ...attrs, name, path });
      res.status(201).json(projectView(ctx, project, user));
    }),
  );

  router.post(
    '/projects/user/:user_id',
    adminRoute(async ({ req, res, who: c, p }) => {
      const owner = db.data.users.find((u) => String(u.id) === String(req.params.user_id));
      if (!owner) throw notFound();
      const name = requiredStr(p, 'name');
      const errors = new FieldErrors();
      const attrs = readAttrs(p, errors, ['name', 'description', 'default_branch', 'import_url']);
      const ns = ensureUserNamespace(db, owner);
      const path = projectPathFromName(name);
      // Here real servers report the limit as a validation error: 400 {"limit_reached": [...]}.
      if (!canCreateProject(ctx, owner)) errors.add('limit_reached', limitMessage(owner));
      validateNames(ctx, errors, ns.id, name, path);
      checkVisibilityAllowed(ctx, owner, attrs.visibility_level, errors);
      if (takenOnly(errors) && !errors.has('limit_reached'))
        throw new HttpError(409, { message: errors.fields });
      errors.throwIfAny();
      const project = await createProject(ctx, owner, ns, { ...attrs, name, path });
      res.status(201).json(projectView(ctx, project, c.user));
    }),
  );

  router.put(
    '/projects/:id',
    projectRoute(db, MASTER, ({ res, who: c, p, project }) => {
      const errors = new FieldErrors();
      const attrs = readAttrs(p, errors, ['name', 'path', 'description', 'default_branch']);
      // Renaming and changing visibility are the owner's (real servers' rename_project and
      // change_visibility_level abilities); masters may edit the rest.
      if (attrs.name !== undefined || attrs.visibility_level !== undefined)
        requireLevel(db, project, c, OWNER);
      validateNames(ctx, errors, project.namespace_id, attrs.name, attrs.path, project);
      checkVisibilityAllowed(ctx, c.user, attrs.visibility_level, errors);
      if (attrs.default_branch !== undefined && attrs.default_branch.trim() === '')
        errors.add('default_branch', "can't be blank");
      errors.throwIfAny();
      const { import_url: _ignored, ...changes } = attrs;
      Object.assign(project, changes);
      db.changed();
      res.json(projectView(ctx, project, c.user));
    }),
  );

  router.post(
    '/projects/fork/:id',
    projectRoute(db, 'visible', async ({ res, who: c, project: source }) => {
      // Forking needs reporter access to a private project; public and internal ones anyone may fork.
      if (source.visibility_level === 0) requireLevel(db, source, c, REPORTER);
      const ns = ensureUserNamespace(db, c.user);
      const errors = new FieldErrors();
      if (!canCreateProject(ctx, c.user)) errors.add('limit_reached', limitMessage(c.user));
      validateNames(ctx, errors, ns.id, source.name, source.path);
      // Real servers answer any failure of the fork with 409 and the model's errors.
      if (errors.has()) throw new HttpError(409, { message: errors.fields });
      const fork = await createProject(
        ctx,
        c.user,
        ns,
        {
          name: source.name,
          path: source.path,
          description: source.description ?? undefined,
          default_branch: source.default_branch,
          visibility_level: source.visibility_level,
          issues_enabled: source.issues_enabled,
          merge_requests_enabled: source.merge_requests_enabled,
          builds_enabled: source.builds_enabled,
          wiki_enabled: source.wiki_enabled,
          snippets_enabled: source.snippets_enabled,
          public_builds: source.public_builds,
        },
        source,
      );
      res.status(201).json(projectView(ctx, fork, c.user));
    }),
  );

  router.post(
    '/projects/:id/star',
    projectRoute(db, 'visible', ({ res, who: c, project }) => {
      if (db.data.stars.some((s) => s.project_id === project.id && s.user_id === c.user.id)) {
        res.status(304).end();
        return;
      }
      db.data.stars.push({ project_id: project.id, user_id: c.user.id });
      db.changed();
      res.status(201).json(projectView(ctx, project, c.user));
    }),
  );

  router.delete(
    '/projects/:id/star',
    projectRoute(db, 'visible', ({ res, who: c, project }) => {
      const index = db.data.stars.findIndex((s) => s.project_id === project.id && s.user_id === c.user.id);
      if (index < 0) {
        res.status(304).end();
        return;
      }
      db.data.stars.splice(index, 1);
      db.changed();
      res.json(projectView(ctx, project, c.user));
    }),
  );

  for (const [action, archived] of [
    ['archive', true],
    ['unarchive', false],
  ] as const) {
    router.post(
      `/projects/:id/${action}`,
      projectRoute(db, OWNER, ({ res, who: c, project }) => {
        // docs/api-v3.md#projects: admin or owner; idempotent.
        if (project.archived !== archived) {
          project.archived = archived;
          db.changed();
        }
        res.status(201).json(projectView(ctx, project, c.user));
      }),
    );
  }

  router.delete(
    '/projects/:id',
    projectRoute(db, OWNER, async ({ res, project }) => {
      await removeProject(ctx, project);
      // docs/api-v3.md#projects does not show the body; real 8.x servers answer the destroy service's result, true.
      res.json(true);
    }),
  );

  router.post(
    '/projects/:id/fork/:forked_from_id',
    projectRoute(db, 'admin', ({ req, res, project }) => {
      const source = db.data.projects.find((x) => String(x.id) === String(req.params.forked_from_id));
      if (!source) throw notFound('Source Project');
      if (project.forked_from_id !== null) throw new HttpError(409, { message: 'Project already forked' });
      project.forked_from_id = source.id;
      db.changed();
      res.status(201).json(forkLinkView(ctx, project, source.id));
    }),
  );

  router.delete(
    '/projects/:id/fork',
    projectRoute(db, 'admin', ({ res, project }) => {
      if (project.forked_from_id === null) {
        res.status(200).end();
        return;
      }
      const view = forkLinkView(ctx, project, project.forked_from_id);
      project.forked_from_id = null;
      db.changed();
      res.json(view);
    }),
  );

  router.post(
    '/projects/:id/uploads',
    uploadMiddleware(ctx),
    projectRoute(db, 'visible', ({ req, res, project }) => {
      const file = req.file;
      if (!file) throw missing('file');
      // Real servers' uploader keeps letters, digits and . - + _ of the name.
      const filename = file.originalname.replace(/[^a-zA-Z0-9.\-+_]/g, '_') || 'file';
      const secret = randomBytes(16).toString('hex');
      db.data.uploads.push({
        id: db.nextId('uploads'),
        project_id: project.id,
        secret,
        filename,
        content_base64: file.buffer.toString('base64'),
        content_type: file.mimetype,
      });
      db.changed();
      const isImage = IMAGE.test(filename);
      // Real servers use the name without its extension as an image's alt text.
      const alt = isImage ? filename.replace(/\.[^.]*$/, '') : filename;
      const url = `/uploads/${secret}/${filename}`;
      // Serving `GET /:namespace/:project/uploads/:secret/:filename` (outside /api/v3) is not part of
      // the API contract; the sandbox stores the file but does not serve it.
      res.status(201).json({
        alt,
        url,
        is_image: isImage,
        markdown: `${isImage ? '!' : ''}[${alt.replace(/]/g, '\\]')}](${url})`,
      });
    }),
  );
}
