/**
 * Users (docs/api-v3.md#users): accounts, the current user, SSH keys, e-mail addresses, block and
 * unblock. Most calls are for administrators; the bot itself mostly reads `current()` to learn who
 * it is (its own comments fire hooks too). No answer here drives a rule, so the types are plain
 * interfaces without a schema (see types.ts).
 */
import type { Http } from './http.ts';
import type { CallOptions, ListOptions, Timestamp } from './types.ts';

/**
 * The normal view. The single-user view (`GET /users/:id`) adds the optional fields. The profile
 * handles use the neutral names of docs/api-v3.md#user (`messenger`, `jobnetwork`, `microblog`).
 */
export interface User {
  id: number;
  username: string;
  name: string;
  /** `active` or `blocked` (real servers also know `ldap_blocked`). */
  state: string;
  avatar_url: string | null;
  /** Sent by real servers, not listed in docs/api-v3.md#users. */
  web_url?: string;
  created_at?: Timestamp;
  is_admin?: boolean;
  bio?: string | null;
  location?: string | null;
  messenger?: string | null;
  jobnetwork?: string | null;
  microblog?: string | null;
  website_url?: string | null;
}

/** What administrators see (lists and single user); create and edit answer this view. */
export interface UserAdminView extends User {
  email: string;
  created_at: Timestamp;
  bio: string | null;
  location: string | null;
  messenger: string | null;
  jobnetwork: string | null;
  microblog: string | null;
  website_url: string | null;
  extern_uid: string | null;
  provider: string | null;
  theme_id: number;
  color_scheme_id: number;
  is_admin: boolean;
  can_create_group: boolean;
  can_create_project: boolean;
  projects_limit: number;
  current_sign_in_at: Timestamp | null;
  two_factor_enabled: boolean;
  /** Single-user admin view only. */
  confirmed_at?: Timestamp | null;
  last_sign_in_at?: Timestamp | null;
}

/** `GET /user`. */
export interface CurrentUser {
  id: number;
  username: string;
  email: string;
  name: string;
  /** A secret: the caller's own token. Never log this object whole. */
  private_token: string;
  state: string;
  created_at: Timestamp;
  bio: string | null;
  location: string | null;
  messenger: string | null;
  jobnetwork: string | null;
  microblog: string | null;
  website_url: string | null;
  theme_id: number;
  color_scheme_id: number;
  is_admin: boolean;
  can_create_group: boolean;
  can_create_project: boolean;
  projects_limit: number;
  avatar_url?: string | null;
}

export interface SshKey {
  id: number;
  title: string;
  /** The public key text. */
  key: string;
  created_at: Timestamp;
}

export interface Email {
  id: number;
  email: string;
}

export interface UserFilter {
  /** Matches e-mail or username. */
  search?: string;
  username?: string;
}

interface UserProfile {
  messenger?: string;
  jobnetwork?: string;
  microblog?: string;
  website_url?: string;
  projects_limit?: number;
  extern_uid?: string;
  provider?: string;
  bio?: string;
  location?: string;
  /** Default false. */
  admin?: boolean;
  can_create_group?: boolean;
  /** Default false. */
  external?: boolean;
}

export interface NewUser extends UserProfile {
  email: string;
  password: string;
  username: string;
  name: string;
  /** Require e-mail confirmation; default true. */
  confirm?: boolean;
}

export interface UserEdit extends UserProfile {
  email?: string;
  username?: string;
  name?: string;
  password?: string;
}

export interface NewSshKey {
  title: string;
  key: string;
}

export function createUsersApi(http: Http) {
  return {
    /** Admins get the admin view of every user, others the normal view. */
    list(filter: UserFilter = {}, options: ListOptions = {}): AsyncIterable<User | UserAdminView> {
      return http.paginate({ method: 'GET', route: '/users', query: { ...filter }, ...options });
    },

    get(userId: number, options: CallOptions = {}): Promise<User | UserAdminView> {
      return http.request({ method: 'GET', route: '/users/:id', params: { id: userId }, ...options });
    },

    /** Admin only. Never retried: a lost answer is `ambiguous`, look the user up before trying again. */
    create(user: NewUser, options: CallOptions = {}): Promise<UserAdminView> {
      return http.request({ method: 'POST', route: '/users', body: { ...user }, ...options });
    },

    /**
     * Admin only. The answer body is "not shown" in docs/api-v3.md#users; real servers answer the admin view.
     * A taken e-mail or username is a 404 here, not a 409 (docs/api-v3.md#errors rule 4).
     */
    update(userId: number, edit: UserEdit, options: CallOptions = {}): Promise<UserAdminView> {
      return http.request({
        method: 'PUT',
        route: '/users/:id',
        params: { id: userId },
        body: { ...edit },
        ...options,
      });
    },

    /** Admin only. Always 200: the answer is the user when it was deleted now, else nothing. */
    async remove(userId: number, options: CallOptions = {}): Promise<User | undefined> {
      const body = await http.request<unknown>({
        method: 'DELETE',
        route: '/users/:id',
        params: { id: userId },
        ...options,
      });
      return isRecord(body) ? (body as unknown as User) : undefined;
    },

    /** The caller (`GET /user`). Its `private_token` is a secret. */
    current(options: CallOptions = {}): Promise<CurrentUser> {
      return http.request({ method: 'GET', route: '/user', ...options });
    },

    /** Admin only. 403 for a user blocked by directory (LDAP) synchronisation. */
    async block(userId: number, options: CallOptions = {}): Promise<void> {
      await http.request({ method: 'PUT', route: '/users/:uid/block', params: { uid: userId }, ...options });
    },

    /** Admin only. 403 for a user blocked by directory (LDAP) synchronisation. */
    async unblock(userId: number, options: CallOptions = {}): Promise<void> {
      await http.request({
        method: 'PUT',
        route: '/users/:uid/unblock',
        params: { uid: userId },
        ...options,
      });
    },

    // SSH keys. Real servers do not paginate `/user/keys`; paginate() reads that as one page.

    listKeys(options: ListOptions = {}): AsyncIterable<SshKey> {
      return http.paginate({ method: 'GET', route: '/user/keys', ...options });
    },

    /** Admin only. */
    listUserKeys(userId: number, options: ListOptions = {}): AsyncIterable<SshKey> {
      return http.paginate({ method: 'GET', route: '/users/:uid/keys', params: { uid: userId }, ...options });
    },

    getKey(keyId: number, options: CallOptions = {}): Promise<SshKey> {
      return http.request({ method: 'GET', route: '/user/keys/:id', params: { id: keyId }, ...options });
    },

    /** 400 with per-field messages (`fingerprint`, `key`: `has already been taken`) for a known key. */
    addKey(key: NewSshKey, options: CallOptions = {}): Promise<SshKey> {
      return http.request({ method: 'POST', route: '/user/keys', body: { ...key }, ...options });
    },

    /** Admin only; 404 on failure. */
    addUserKey(userId: number, key: NewSshKey, options: CallOptions = {}): Promise<SshKey> {
      return http.request({
        method: 'POST',
        route: '/users/:id/keys',
        params: { id: userId },
        body: { ...key },
        ...options,
      });
    },

    /** Idempotent: removing a key that is gone still answers 200. */
    async removeKey(keyId: number, options: CallOptions = {}): Promise<void> {
      await http.request({ method: 'DELETE', route: '/user/keys/:id', params: { id: keyId }, ...options });
    },

    /** Admin only; unlike `removeKey`, 404 when the user or the key is missing. */
    async removeUserKey(userId: number, keyId: number, options: CallOptions = {}): Promise<void> {
      await http.request({
        method: 'DELETE',
        route: '/users/:uid/keys/:id',
        params: { uid: userId, id: keyId },
        ...options,
      });
    },

    // E-mail addresses. Real servers do not paginate `/user/emails` either.

    listEmails(options: ListOptions = {}): AsyncIterable<Email> {
      return http.paginate({ method: 'GET', route: '/user/emails', ...options });
    },

    /** Admin only. */
    listUserEmails(userId: number, options: ListOptions = {}): AsyncIterable<Email> {
      return http.paginate({
        method: 'GET',
        route: '/users/:uid/emails',
        params: { uid: userId },
        ...options,
      });
    },

    getEmail(emailId: number, options: CallOptions = {}): Promise<Email> {
      return http.request({ method: 'GET', route: '/user/emails/:id', params: { id: emailId }, ...options });
    },

    /** 400 with `{"email": ["has already been taken"]}` for a known address. */
    addEmail(email: string, options: CallOptions = {}): Promise<Email> {
      return http.request({ method: 'POST', route: '/user/emails', body: { email }, ...options });
    },

    /** Admin only; 404 on failure. */
    addUserEmail(userId: number, email: string, options: CallOptions = {}): Promise<Email> {
      return http.request({
        method: 'POST',
        route: '/users/:id/emails',
        params: { id: userId },
        body: { email },
        ...options,
      });
    },

    /** Idempotent: removing an address that is gone still answers 200. */
    async removeEmail(emailId: number, options: CallOptions = {}): Promise<void> {
      await http.request({
        method: 'DELETE',
        route: '/user/emails/:id',
        params: { id: emailId },
        ...options,
      });
    },

    /** Admin only; 404 when the user or the address is missing. */
    async removeUserEmail(userId: number, emailId: number, options: CallOptions = {}): Promise<void> {
      await http.request({
        method: 'DELETE',
        route: '/users/:uid/emails/:id',
        params: { uid: userId, id: emailId },
        ...options,
      });
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
