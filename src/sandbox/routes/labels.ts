/**
 * Labels (docs/api-v3.md#labels): list with counts, create, rename or recolour, delete. Labels belong to
 * one project; issues and merge requests carry them by name, so renaming or deleting a label changes
 * every issuable that carries it (as the real servers' label links do).
 */
import type { Router } from 'express';
import type { SandboxContext } from '../context.ts';
import type { LabelRec, ProjectRec, UserRec } from '../db.ts';
import { FieldErrors } from '../field-errors.ts';
import { canReadIssue, inStateScope } from '../issuables.ts';
import { conflict, HttpError, notFound, requiredStr, sendPage, str } from '../http.ts';
import { accessLevel, DEVELOPER, REPORTER } from '../permissions.ts';
import { projectRoute } from '../route.ts';

/** The colour real servers give a label they create on the fly (an issue naming an unknown label). */
export const DEFAULT_LABEL_COLOR = '#428BCA';

/**
 * Label title format of the last 8.x releases (8.13 on): anything but `,`, the separator of the
 * `labels` list. Earlier servers also refused `&` and `?`; names such as `label?`, `label&foo`, `?` and
 * `&` are valid here, so clients must encode them in paths and queries.
 */
const TITLE_FORMAT = /^[^,]+$/;
/** docs/api-v3.md#labels: `#` followed by 6 hex digits (real 8.x also accepts 3 digits; the contract wins). */
const COLOR_FORMAT = /^#[0-9A-Fa-f]{6}$/;

function validTitle(title: string): boolean {
  return TITLE_FORMAT.test(title);
}

/**
 * The `labels` parameter of issues and merge requests: comma-separated names (or a JSON array), each
 * checked in advance as real servers do. Split on commas, a name can only be refused when it comes in a
 * JSON array with a comma inside (`{"message":{"labels":{"a,b":{"title":["is invalid"]}}}}`).
 * Undefined when absent.
 */
export function labelsParam(p: Record<string, unknown>): string[] | undefined {
  const value = p.labels;
  if (value === undefined || value === null) return undefined;
  const names = (Array.isArray(value) ? value.map(String) : String(value).split(','))
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
  const invalid = names.filter((name) => !validTitle(name));
  if (invalid.length)
    throw new HttpError(400, {
      message: { labels: Object.fromEntries(invalid.map((name) => [name, { title: ['is invalid'] }])) },
    });
  return [...new Set(names)];
}

/**
 * The named labels of the project that an issue or merge request may carry. A missing label is created
 * (with the default colour) only when `user` may administer labels, reporter or above, as the last 8.x
 * releases' find-or-create service checks; for a guest or a non-member it is dropped and nothing is
 * created. Earlier servers created it for anyone.
 */
export function ensureLabels(
  ctx: SandboxContext,
  project: ProjectRec,
  names: string[],
  user: UserRec,
): string[] {
  const mayCreate = accessLevel(ctx.db, project, user) >= REPORTER;
  const exists = (title: string) =>
    ctx.db.data.labels.some((l) => l.project_id === project.id && l.title === title);
  const kept = names.filter((title) => mayCreate || exists(title));
  const now = ctx.db.now();
  for (const title of kept) {
    if (exists(title)) continue;
    ctx.db.data.labels.push({
      id: ctx.db.nextId('labels'),
      project_id: project.id,
      title,
      color: DEFAULT_LABEL_COLOR,
      description: null,
      template: false,
      created_at: now,
      updated_at: now,
    });
  }
  ctx.db.changed();
  return kept;
}

/** The label as the API shows it; the counts are of what the caller may see (real 8.x counts per user). */
function labelView(ctx: SandboxContext, project: ProjectRec, label: LabelRec, user: UserRec) {
  const issues = ctx.db.data.issues.filter(
    (i) =>
      i.project_id === project.id &&
      !i.deleted &&
      i.labels.includes(label.title) &&
      canReadIssue(ctx, project, i, user),
  );
  const mergeRequests = ctx.db.data.mergeRequests.filter(
    (m) => m.project_id === project.id && !m.deleted && m.labels.includes(label.title),
  );
  return {
    name: label.title,
    color: label.color,
    description: label.description,
    open_issues_count: issues.filter((i) => inStateScope(i.state, 'opened')).length,
    closed_issues_count: issues.filter((i) => inStateScope(i.state, 'closed')).length,
    open_merge_requests_count: mergeRequests.filter((m) => inStateScope(m.state, 'opened')).length,
  };
}

function findLabel(ctx: SandboxContext, project: ProjectRec, name: string): LabelRec {
  const label = ctx.db.data.labels.find((l) => l.project_id === project.id && l.title === name);
  if (!label) throw notFound('Label');
  return label;
}

/** Renames (`to` a name) or removes (`to` undefined) a label on every issue and merge request of the project. */
function relabel(ctx: SandboxContext, project: ProjectRec, from: string, to: string | undefined): void {
  for (const item of [...ctx.db.data.issues, ...ctx.db.data.mergeRequests]) {
    if (item.project_id !== project.id || !item.labels.includes(from)) continue;
    item.labels = item.labels.flatMap((name) => (name !== from ? [name] : to === undefined ? [] : [to]));
  }
}

export function registerLabelRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;

  // docs/api-v3.md#pagination: every GET list is paginated (real servers do not paginate labels; the contract wins).
  router.get(
    '/projects/:id/labels',
    projectRoute(db, 'visible', ({ req, res, who, project }) => {
      const labels = db.data.labels
        .filter((l) => l.project_id === project.id)
        .sort((a, b) => a.title.localeCompare(b.title));
      sendPage(
        req,
        res,
        labels.map((l) => labelView(ctx, project, l, who.user)),
      );
    }),
  );

  // docs/api-v3.md#labels: label create answers 200 (not 201).
  router.post(
    '/projects/:id/labels',
    projectRoute(db, DEVELOPER, ({ res, who, p, project }) => {
      const name = requiredStr(p, 'name').trim();
      const color = requiredStr(p, 'color').trim();
      if (db.data.labels.some((l) => l.project_id === project.id && l.title === name))
        throw conflict('Label already exists');
      const errors = new FieldErrors();
      if (!validTitle(name)) errors.add('title', 'is invalid');
      if (!COLOR_FORMAT.test(color)) errors.add('color', 'must be a valid color code');
      errors.throwIfAny();
      const now = db.now();
      const label: LabelRec = {
        id: db.nextId('labels'),
        project_id: project.id,
        title: name,
        color,
        description: str(p, 'description') ?? null,
        template: false,
        created_at: now,
        updated_at: now,
      };
      db.data.labels.push(label);
      db.changed();
      res.status(200).json(labelView(ctx, project, label, who.user));
    }),
  );

  router.put(
    '/projects/:id/labels',
    projectRoute(db, DEVELOPER, ({ res, who, p, project }) => {
      const label = findLabel(ctx, project, requiredStr(p, 'name'));
      const newName = str(p, 'new_name')?.trim() || undefined;
      const color = str(p, 'color')?.trim() || undefined;
      // docs/api-v3.md#labels: at least one of new_name or color (a description alone is not enough).
      if (newName === undefined && color === undefined)
        throw new HttpError(400, { message: 'Required parameters "new_name" or "color" missing' });
      const taken =
        newName !== undefined &&
        newName !== label.title &&
        db.data.labels.some((l) => l.project_id === project.id && l.title === newName);
      const errors = new FieldErrors();
      if (newName !== undefined && !validTitle(newName)) errors.add('title', 'is invalid');
      if (taken) errors.add('title', 'has already been taken');
      if (color !== undefined && !COLOR_FORMAT.test(color)) errors.add('color', 'must be a valid color code');
      errors.throwIfAny();
      if (newName !== undefined && newName !== label.title) {
        relabel(ctx, project, label.title, newName);
        label.title = newName;
      }
      if (color !== undefined) label.color = color;
      const description = str(p, 'description');
      if (description !== undefined) label.description = description;
      label.updated_at = db.now();
      db.changed();
      res.json(labelView(ctx, project, label, who.user));
    }),
  );

  router.delete(
    '/projects/:id/labels',
    projectRoute(db, DEVELOPER, ({ res, p, project }) => {
      const label = findLabel(ctx, project, requiredStr(p, 'name'));
      relabel(ctx, project, label.title, undefined);
      db.data.labels = db.data.labels.filter((l) => l !== label);
      db.changed();
      // docs/api-v3.md#labels: the deleted label record (the model's own fields, not the label view).
      res.json({
        id: label.id,
        title: label.title,
        color: label.color,
        description: label.description,
        project_id: label.project_id,
        template: label.template,
        created_at: label.created_at,
        updated_at: label.updated_at,
      });
    }),
  );
}
