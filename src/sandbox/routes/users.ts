/**
 * Users (docs/api-v3.md#users): listing and reading users, admin create/edit/delete, the current user,
 * SSH keys, e-mails, block and unblock. Where docs/api-v3.md#users is silent the answers follow the real 8.x
 * servers' lib/api/users.rb.
 */
import { createHash } from 'node:crypto';
import type { Router } from 'express';
import type { Caller, SandboxContext } from '../context.ts';
import type { UserRec } from '../db.ts';
import { addUser } from '../factories.ts';
import { FieldErrors, looksLikeEmail } from '../field-errors.ts';
import { HttpError, conflict, flag, notFound, requiredStr, sendPage, str } from '../http.ts';
import { removeProject, removeWhere } from '../remove-project.ts';
import {
  currentUserView,
  emailView,
  keyView,
  userAdminSingleView,
  userAdminView,
  userNormalView,
  userSingleView,
} from '../user-view.ts';
import { adminRoute, route, type RouteCall } from '../route.ts';

/** Real servers' namespace path rule and its message (Gitlab::Regex.namespace_regex). */
const USERNAME = /^[a-zA-Z0-9_.][a-zA-Z0-9_.-]*$/;
const USERNAME_MESSAGE =
  "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-' or end in '.'.";

/** The profile fields `POST /users` and `PUT /users/:id` accept besides the required ones. */
const TEXT_FIELDS = ['messenger', 'jobnetwork', 'microblog', 'website_url', 'bio', 'location'] as const;

interface UserAttrs {
  email?: string;
  username?: string;
  name?: string;
  password?: string;
  messenger?: string;
  jobnetwork?: string;
  microblog?: string;
  website_url?: string;
  bio?: string;
  location?: string;
  projects_limit?: number;
  extern_uid?: string;
  provider?: string;
  admin?: boolean;
  can_create_group?: boolean;
  external?: boolean;
}

function readAttrs(p: Record<string, unknown>, errors: FieldErrors): UserAttrs {
  const attrs: UserAttrs = {};
  for (const key of [
    'email',
    'username',
    'name',
    'password',
    'extern_uid',
    'provider',
    ...TEXT_FIELDS,
  ] as const) {
    const value = str(p, key);
    if (value !== undefined) attrs[key] = value;
  }
  const limit = p.projects_limit;
  if (limit !== undefined && limit !== null && limit !== '') {
    const n = Number(limit);
    if (!Number.isInteger(n)) errors.add('projects_limit', 'is not a number');
    else attrs.projects_limit = n;
  }
  for (const key of ['admin', 'can_create_group', 'external'] as const) {
    const value = flag(p, key);
    if (value !== undefined) attrs[key] = value;
  }
  return attrs;
}

function sameText(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** The model validations of real servers' User, as far as a client can meet them. */
function validate(ctx: SandboxContext, attrs: UserAttrs, errors: FieldErrors, self?: UserRec): void {
  const d = ctx.db.data;
  if (attrs.email !== undefined) {
    if (!looksLikeEmail(attrs.email)) errors.add('email', 'is invalid');
    // A secondary e-mail of anyone counts as taken too (real servers' `unique_email` validation).
    else if (d.emails.some((e) => sameText(e.email, attrs.email!) && e.user_id !== self?.id))
      errors.add('email', 'has already been taken');
  }
  if (attrs.username !== undefined) {
    if (!USERNAME.test(attrs.username) || attrs.username.endsWith('.'))
      errors.add('username', USERNAME_MESSAGE);
    errors.maxLength('username', attrs.username, 255);
    // A group's path is a namespace too: the username cannot take it.
    const ownNs = self && d.namespaces.find((n) => n.kind === 'user' && n.owner_id === self.id);
    if (d.namespaces.some((n) => n !== ownNs && n.kind === 'group' && sameText(n.path, attrs.username!)))
      errors.add('username', 'has already been taken');
  }
  if (attrs.name !== undefined) {
    if (attrs.name.trim() === '') errors.add('name', "can't be blank");
    errors.maxLength('name', attrs.name, 255);
  }
  if (attrs.password !== undefined && attrs.password.length < 8)
    errors.add('password', 'is too short (minimum is 8 characters)');
  errors.maxLength('bio', attrs.bio, 255);
  if (attrs.projects_limit !== undefined && attrs.projects_limit < 0)
    errors.add('projects_limit', 'must be greater than or equal to 0');
}

function emailTaken(ctx: SandboxContext, email: string | undefined, self?: UserRec): boolean {
  return email !== undefined && ctx.db.data.users.some((u) => u !== self && sameText(u.email, email));
}

function usernameTaken(ctx: SandboxContext, username: string | undefined, self?: UserRec): boolean {
  return (
    username !== undefined && ctx.db.data.users.some((u) => u !== self && sameText(u.username, username))
  );
}

function applyAttrs(user: UserRec, attrs: UserAttrs): void {
  for (const key of ['email', 'username', 'name', 'password', ...TEXT_FIELDS] as const) {
    const value = attrs[key];
    if (value !== undefined) user[key] = value;
  }
  if (attrs.extern_uid !== undefined) user.extern_uid = attrs.extern_uid;
  if (attrs.provider !== undefined) user.provider = attrs.provider;
  if (attrs.projects_limit !== undefined) user.projects_limit = attrs.projects_limit;
  if (attrs.admin !== undefined) user.is_admin = attrs.admin;
  if (attrs.can_create_group !== undefined) user.can_create_group = attrs.can_create_group;
  if (attrs.external !== undefined) user.external = attrs.external;
}

function userById(ctx: SandboxContext, ref: string | undefined): UserRec | undefined {
  return ref !== undefined && /^\d+$/.test(ref)
    ? ctx.db.data.users.find((u) => u.id === Number(ref))
    : undefined;
}

/** The user a `/users/:uid/...` admin path names, or `404 User Not Found`. */
function targetUser(ctx: SandboxContext, ref: string | undefined): UserRec {
  const user = userById(ctx, ref);
  if (!user) throw notFound('User');
  return user;
}

// ---- SSH keys ----

/** The key types real servers' `ssh-keygen -lf` fingerprints. */
const KEY_TYPES = /^(ssh-(rsa|dss|ed25519)|ecdsa-sha2-nistp(256|384|521))$/;

/** The MD5 fingerprint of the key's blob, or undefined when the text is not a public key. */
export function keyFingerprint(text: string): string | undefined {
  const [type = '', blob = ''] = text.trim().split(/\s+/);
  if (!KEY_TYPES.test(type) || !/^[A-Za-z0-9+/]+={0,2}$/.test(blob)) return undefined;
  const bytes = Buffer.from(blob, 'base64');
  // The blob starts with its own type name: a mismatch means the text is not a real key.
  if (bytes.length < 4) return undefined;
  const length = bytes.readUInt32BE(0);
  if (length + 4 > bytes.length || bytes.subarray(4, 4 + length).toString('latin1') !== type)
    return undefined;
  const hex = createHash('md5').update(bytes).digest('hex');
  return hex.replace(/(..)(?!$)/g, '$1:');
}

/** Validates a key for `user` (title and key given); per-field errors as real servers word them. */
function keyErrors(ctx: SandboxContext, title: string, key: string): FieldErrors {
  const errors = new FieldErrors();
  errors.maxLength('title', title, 255);
  if (/[\r\n]/.test(key.trim())) errors.add('key', 'should be a single line');
  else if (!/^(ssh|ecdsa)-/.test(key.trim())) errors.add('key', 'is invalid');
  errors.maxLength('key', key, 5000);
  const fingerprint = keyFingerprint(key);
  if (fingerprint === undefined) errors.add('fingerprint', 'cannot be generated');
  else if (ctx.db.data.keys.some((k) => keyFingerprint(k.key) === fingerprint))
    errors.add('fingerprint', 'has already been taken');
  if (ctx.db.data.keys.some((k) => k.key === key.trim())) errors.add('key', 'has already been taken');
  return errors;
}

function addKey(ctx: SandboxContext, user: UserRec, title: string, key: string) {
  const rec = {
    id: ctx.db.nextId('keys'),
    user_id: user.id,
    title,
    key: key.trim(),
    created_at: ctx.db.now(),
  };
  ctx.db.data.keys.push(rec);
  ctx.db.changed();
  return rec;
}

// ---- e-mails ----

function emailErrors(ctx: SandboxContext, email: string): FieldErrors {
  const errors = new FieldErrors();
  if (!looksLikeEmail(email)) errors.add('email', 'is invalid');
  else if (
    ctx.db.data.emails.some((e) => sameText(e.email, email)) ||
    ctx.db.data.users.some((u) => sameText(u.email, email))
  )
    errors.add('email', 'has already been taken');
  return errors;
}

function addEmail(ctx: SandboxContext, user: UserRec, email: string) {
  const rec = { id: ctx.db.nextId('emails'), user_id: user.id, email: email.trim() };
  ctx.db.data.emails.push(rec);
  ctx.db.changed();
  return rec;
}

// ---- removal ----

/** Groups whose only owner is `user`: real servers refuse to remove such a user. */
function soloOwnedGroups(ctx: SandboxContext, user: UserRec): number[] {
  const d = ctx.db.data;
  return d.namespaces
    .filter((n) => n.kind === 'group')
    .filter((g) => {
      const owners = d.groupMembers.filter((m) => m.group_id === g.id && m.access_level >= 50);
      return owners.length === 1 && owners[0]!.user_id === user.id;
    })
    .map((g) => g.id);
}

/**
 * What real 8.x servers remove with a user: personal projects, keys, e-mails, memberships, stars,
 * subscriptions and (their models' `dependent: :destroy`) authored issues, merge requests, notes and
 * events; assignments are cleared.
 */
async function removeUser(ctx: SandboxContext, user: UserRec): Promise<void> {
  const d = ctx.db.data;
  const ns = d.namespaces.find((n) => n.kind === 'user' && n.owner_id === user.id);
  for (const project of d.projects.filter((p) => ns && p.namespace_id === ns.id))
    await removeProject(ctx, project);
  removeWhere(d.users, (u) => u.id === user.id);
  removeWhere(d.namespaces, (n) => n === ns);
  removeWhere(d.keys, (k) => k.user_id === user.id);
  removeWhere(d.emails, (e) => e.user_id === user.id);
  removeWhere(d.members, (m) => m.user_id === user.id);
  removeWhere(d.groupMembers, (m) => m.user_id === user.id);
  removeWhere(d.stars, (s) => s.user_id === user.id);
  removeWhere(d.subscriptions, (s) => s.user_id === user.id);
  removeWhere(d.issues, (i) => i.author_id === user.id);
  removeWhere(d.mergeRequests, (m) => m.author_id === user.id);
  removeWhere(d.notes, (n) => n.author_id === user.id);
  removeWhere(d.events, (e) => e.author_id === user.id);
  for (const item of [...d.issues, ...d.mergeRequests])
    if (item.assignee_id === user.id) item.assignee_id = null;
  ctx.db.changed();
}

// ---- routes ----

function listUsers(ctx: SandboxContext, { req, res, who: c, p }: RouteCall) {
  const username = str(p, 'username');
  const search = str(p, 'search')?.toLowerCase();
  const active = flag(p, 'active');
  let users = ctx.db.data.users;
  if (username) users = users.filter((u) => u.username === username);
  // docs/api-v3.md#users: search matches e-mail or username.
  if (search)
    users = users.filter(
      (u) => u.username.toLowerCase().includes(search) || u.email.toLowerCase().includes(search),
    );
  if (active) users = users.filter((u) => u.state === 'active');
  const view = c.user.is_admin ? userAdminView : userNormalView;
  sendPage(
    req,
    res,
    users.map((u) => view(ctx, u)),
  );
}

function ownItem<T extends { id: number; user_id: number }>(items: T[], c: Caller, ref: string | undefined) {
  return items.find((k) => k.user_id === c.user.id && String(k.id) === ref);
}

export function registerUserRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;

  router.get(
    '/users',
    route((call) => listUsers(ctx, call)),
  );

  router.get(
    '/users/:id',
    route(({ req, res, who: c }) => {
      const user = userById(ctx, String(req.params.id));
      if (!user) throw notFound('User');
      res.json(c.user.is_admin ? userAdminSingleView(ctx, user) : userSingleView(ctx, user));
    }),
  );

  router.post(
    '/users',
    adminRoute(({ res, p }) => {
      // The order real servers check the required attributes in.
      for (const name of ['email', 'password', 'name', 'username']) requiredStr(p, name);
      const errors = new FieldErrors();
      const attrs = readAttrs(p, errors);
      validate(ctx, attrs, errors);
      // Real 8.x answers a taken e-mail or username with 409 and these texts (docs/api-v3.md#errors rule 4 is
      // about modification; creation follows the real servers).
      if (emailTaken(ctx, attrs.email)) throw conflict('Email has already been taken');
      if (usernameTaken(ctx, attrs.username)) throw conflict('Username has already been taken');
      errors.throwIfAny();
      // `confirm` (default true) means "require confirmation": the user stays unconfirmed until then.
      const confirm = flag(p, 'confirm') ?? true;
      const user = addUser(db, {
        username: attrs.username!,
        name: attrs.name!,
        email: attrs.email!,
        password: attrs.password!,
        is_admin: attrs.admin ?? false,
        projects_limit: attrs.projects_limit,
        can_create_group: attrs.can_create_group,
        external: attrs.external,
        confirmed: !confirm,
        bio: attrs.bio ?? null,
        location: attrs.location ?? null,
        messenger: attrs.messenger,
        jobnetwork: attrs.jobnetwork,
        microblog: attrs.microblog,
        website_url: attrs.website_url,
        extern_uid: attrs.extern_uid ?? null,
        provider: attrs.provider ?? null,
      });
      res.status(201).json(userAdminSingleView(ctx, user));
    }),
  );

  router.put(
    '/users/:id',
    adminRoute(({ req, res, p }) => {
      const user = targetUser(ctx, String(req.params.id));
      const errors = new FieldErrors();
      const attrs = readAttrs(p, errors);
      validate(ctx, attrs, errors, user);
      // docs/api-v3.md#errors rule 4: modification answers 404 even where 409 would fit (a taken e-mail
      // or username), as the servers it describes did (`not_found!` on a failed update).
      if (emailTaken(ctx, attrs.email, user) || usernameTaken(ctx, attrs.username, user) || hasTaken(errors))
        throw notFound();
      errors.throwIfAny();
      applyAttrs(user, attrs);
      if (attrs.username !== undefined) {
        // The personal namespace follows the username, as on real servers.
        const ns = db.data.namespaces.find((n) => n.kind === 'user' && n.owner_id === user.id);
        if (ns) Object.assign(ns, { name: attrs.username, path: attrs.username, updated_at: db.now() });
      }
      db.changed();
      res.json(userAdminSingleView(ctx, user));
    }),
  );

  router.delete(
    '/users/:id',
    adminRoute(async ({ req, res }) => {
      const user = userById(ctx, String(req.params.id));
      // docs/api-v3.md#users: always 200; the body is the user only if it was actually deleted. Real servers
      // keep a user who is the only owner of a group.
      if (!user || soloOwnedGroups(ctx, user).length > 0) {
        res.status(200).end();
        return;
      }
      const view = userAdminSingleView(ctx, user);
      await removeUser(ctx, user);
      res.json(view);
    }),
  );

  // Block and unblock answer the state transition's result like real 8.x servers: `true` when the
  // state changed, `false` when it already held (docs/api-v3.md#users only says 200).
  for (const [action, to] of [
    ['block', 'blocked'],
    ['unblock', 'active'],
  ] as const) {
    router.put(
      `/users/:uid/${action}`,
      adminRoute(({ req, res }) => {
        const user = targetUser(ctx, String(req.params.uid));
        if (user.ldap_blocked)
          throw new HttpError(403, {
            message: `403 Forbidden - LDAP blocked users cannot be ${action === 'block' ? 'modified' : 'unblocked'} by the API`,
          });
        const changed = user.state !== to;
        user.state = to;
        if (changed) db.changed();
        res.json(changed);
      }),
    );
  }

  router.get(
    '/user',
    route(({ res, who }) => {
      res.json(currentUserView(ctx, who.user));
    }),
  );

  // ---- keys ----

  // docs/api-v3.md#pagination: every GET list is paginated (real servers do not paginate these two).
  router.get(
    '/user/keys',
    route(({ req, res, who: c }) => {
      sendPage(req, res, db.data.keys.filter((k) => k.user_id === c.user.id).map(keyView));
    }),
  );

  router.get(
    '/user/keys/:id',
    route(({ req, res, who }) => {
      const key = ownItem(db.data.keys, who, String(req.params.id));
      if (!key) throw notFound();
      res.json(keyView(key));
    }),
  );

  router.post(
    '/user/keys',
    route(({ res, who: c, p }) => {
      const title = requiredStr(p, 'title');
      const key = requiredStr(p, 'key');
      keyErrors(ctx, title, key).throwIfAny();
      res.status(201).json(keyView(addKey(ctx, c.user, title, key)));
    }),
  );

  router.delete(
    '/user/keys/:id',
    route(({ req, res, who }) => {
      const key = ownItem(db.data.keys, who, String(req.params.id));
      // Idempotent: an absent key answers 200 with an empty body.
      if (!key) {
        res.status(200).end();
        return;
      }
      removeWhere(db.data.keys, (k) => k === key);
      db.changed();
      res.json(keyView(key));
    }),
  );

  router.get(
    '/users/:uid/keys',
    adminRoute(({ req, res }) => {
      const user = targetUser(ctx, String(req.params.uid));
      sendPage(req, res, db.data.keys.filter((k) => k.user_id === user.id).map(keyView));
    }),
  );

  router.post(
    '/users/:uid/keys',
    adminRoute(({ req, res, p }) => {
      const title = requiredStr(p, 'title');
      const key = requiredStr(p, 'key');
      const user = userById(ctx, String(req.params.uid));
      // docs/api-v3.md#users: the admin path answers 404 on failure (a missing user or an invalid or taken key).
      if (!user || keyErrors(ctx, title, key).has()) throw notFound();
      res.status(201).json(keyView(addKey(ctx, user, title, key)));
    }),
  );

  router.delete(
    '/users/:uid/keys/:id',
    adminRoute(({ req, res }) => {
      const user = targetUser(ctx, String(req.params.uid));
      const key = db.data.keys.find((k) => k.user_id === user.id && String(k.id) === String(req.params.id));
      if (!key) throw notFound('Key');
      removeWhere(db.data.keys, (k) => k === key);
      db.changed();
      res.json(keyView(key));
    }),
  );

  // ---- e-mails ----

  router.get(
    '/user/emails',
    route(({ req, res, who: c }) => {
      sendPage(req, res, db.data.emails.filter((e) => e.user_id === c.user.id).map(emailView));
    }),
  );

  router.get(
    '/user/emails/:id',
    route(({ req, res, who }) => {
      const email = ownItem(db.data.emails, who, String(req.params.id));
      if (!email) throw notFound();
      res.json(emailView(email));
    }),
  );

  router.post(
    '/user/emails',
    route(({ res, who: c, p }) => {
      const email = requiredStr(p, 'email');
      emailErrors(ctx, email).throwIfAny();
      res.status(201).json(emailView(addEmail(ctx, c.user, email)));
    }),
  );

  router.delete(
    '/user/emails/:id',
    route(({ req, res, who }) => {
      const email = ownItem(db.data.emails, who, String(req.params.id));
      if (!email) {
        res.status(200).end();
        return;
      }
      removeWhere(db.data.emails, (e) => e === email);
      db.changed();
      res.json(emailView(email));
    }),
  );

  router.get(
    '/users/:uid/emails',
    adminRoute(({ req, res }) => {
      const user = targetUser(ctx, String(req.params.uid));
      sendPage(req, res, db.data.emails.filter((e) => e.user_id === user.id).map(emailView));
    }),
  );

  router.post(
    '/users/:uid/emails',
    adminRoute(({ req, res, p }) => {
      const email = requiredStr(p, 'email');
      const user = userById(ctx, String(req.params.uid));
      if (!user || emailErrors(ctx, email).has()) throw notFound();
      res.status(201).json(emailView(addEmail(ctx, user, email)));
    }),
  );

  router.delete(
    '/users/:uid/emails/:id',
    adminRoute(({ req, res }) => {
      const user = targetUser(ctx, String(req.params.uid));
      const email = db.data.emails.find(
        (e) => e.user_id === user.id && String(e.id) === String(req.params.id),
      );
      if (!email) throw notFound('Email');
      removeWhere(db.data.emails, (e) => e === email);
      db.changed();
      res.json(emailView(email));
    }),
  );
}

/** A taken e-mail or username found by the validations (e.g. a group path or a secondary e-mail). */
function hasTaken(errors: FieldErrors): boolean {
  return ['email', 'username'].some((f) => errors.fields[f]?.includes('has already been taken'));
}
