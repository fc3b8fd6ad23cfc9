/**
 * Projects (docs/api-v3.md#projects): list, read, create, edit, fork, star, archive, remove, search,
 * the activity feed and uploads.
 */
import { z } from 'zod';
import type { Change, Http } from './http.ts';
import type { CallOptions, ListOptions, OrderSort, ProjectRef, Timestamp, UserSummary } from './types.ts';

/** Project visibility levels (settings use 0/1/2 instead, see settings.ts). */
export const VisibilityLevel = { private: 0, internal: 10, public: 20 } as const;
export type VisibilityLevel = (typeof VisibilityLevel)[keyof typeof VisibilityLevel];

/** Checks the fields the bot reads; every other documented field (docs/api-v3.md#project) passes through. */
export const projectSchema = z.looseObject({
  id: z.number(),
  name: z.string(),
  path: z.string(),
  path_with_namespace: z.string(),
  name_with_namespace: z.string().optional(),
  description: z.string().nullable().optional(),
  /** `null` for a project whose repository is still empty. */
  default_branch: z.string().nullable(),
  visibility_level: z.number(),
  /** Absent in some answers of older servers. */
  archived: z.boolean().optional(),
  web_url: z.string().optional(),
  namespace: z.looseObject({ id: z.number(), name: z.string(), path: z.string() }),
  /** The owner of a project in a user namespace; absent for a group's project. */
  owner: z.looseObject({ id: z.number() }).nullish(),
  issues_enabled: z.boolean().optional(),
  merge_requests_enabled: z.boolean().optional(),
});
export type Project = z.infer<typeof projectSchema>;

export interface ProjectFilter {
  archived?: boolean;
  visibility?: 'public' | 'internal' | 'private';
  order_by?: 'id' | 'name' | 'path' | 'created_at' | 'updated_at' | 'last_activity_at';
  sort?: OrderSort;
  search?: string;
}

export interface ProjectSearchOrder {
  order_by?: 'id' | 'name' | 'created_at' | 'last_activity_at';
  sort?: OrderSort;
}

interface ProjectFeatures {
  description?: string;
  issues_enabled?: boolean;
  merge_requests_enabled?: boolean;
  builds_enabled?: boolean;
  wiki_enabled?: boolean;
  snippets_enabled?: boolean;
  /** `true` equals `visibility_level: 20`. */
  public?: boolean;
  visibility_level?: VisibilityLevel;
  public_builds?: boolean;
}

export interface NewProject extends ProjectFeatures {
  name: string;
  /** Default: generated from the name. */
  path?: string;
  /** Default: the caller's own namespace. */
  namespace_id?: number;
  import_url?: string;
}

/** `POST /projects/user/:user_id` takes neither `path` nor `namespace_id`. */
export type NewUserProject = Omit<NewProject, 'path' | 'namespace_id'>;

export interface ProjectEdit extends ProjectFeatures {
  name?: string;
  path?: string;
  default_branch?: string;
}

/** `data` of a push event in the activity feed (docs/api-v3.md#events). */
export interface PushEventData {
  before: string;
  after: string;
  /** Full ref name, e.g. `refs/heads/master`. */
  ref: string;
  user_id: number;
  user_name: string;
  repository: { name: string; url: string; description: string | null; homepage: string };
  commits: {
    id: string;
    message: string;
    timestamp: Timestamp;
    url: string;
    author: { name: string; email: string };
  }[];
  total_commits_count: number;
}

export interface ProjectEventNote {
  id: number;
  body: string;
  attachment: string | null;
  author: UserSummary;
  created_at: Timestamp;
  system: boolean;
  upvote: boolean;
  downvote: boolean;
  noteable_id: number;
  noteable_type: string;
}

export interface ProjectEvent {
  title: string | null;
  project_id: number;
  /** Values seen: `opened`, `closed`, `commented on` (real servers also `pushed to`, ...). */
  action_name: string;
  target_id: number | null;
  /** Values seen: `Issue`, `Note`; `null` for pushes. */
  target_type: string | null;
  target_title: string | null;
  author_id: number;
  author: UserSummary;
  author_username: string;
  created_at?: Timestamp;
  /** The push data for a push event, else `null`. */
  data: PushEventData | null;
  /** Present when `target_type` is `Note`. */
  note?: ProjectEventNote;
}

/** A file to upload; `contentType` defaults to `application/octet-stream`. */
export interface UploadFile {
  filename: string;
  content: Buffer | string;
  contentType?: string;
}

export interface UploadResult {
  alt: string;
  /** Relative to the project path, e.g. `/uploads/66dbcd21ec5d24ed6ea225176098d52b/shot.png`. */
  url: string;
  is_image: boolean;
  /** A ready-made Markdown link for a description or a comment. */
  markdown: string;
}

export function createProjectsApi(http: Http) {
  function listing(route: string, filter: ProjectFilter, options: ListOptions): AsyncIterable<Project> {
    return http.paginate({ method: 'GET', route, query: { ...filter }, schema: projectSchema, ...options });
  }

  return {
    /** Projects the caller can access. */
    list(filter: ProjectFilter = {}, options: ListOptions = {}): AsyncIterable<Project> {
      return listing('/projects', filter, options);
    },

    listOwned(filter: ProjectFilter = {}, options: ListOptions = {}): AsyncIterable<Project> {
      return listing('/projects/owned', filter, options);
    },

    listStarred(filter: ProjectFilter = {}, options: ListOptions = {}): AsyncIterable<Project> {
      return listing('/projects/starred', filter, options);
    },

    /** Every project of the instance; admin only. */
    listAll(filter: ProjectFilter = {}, options: ListOptions = {}): AsyncIterable<Project> {
      return listing('/projects/all', filter, options);
    },

    /** Projects whose name contains `text`, among those the caller can access. */
    search(text: string, order: ProjectSearchOrder = {}, options: ListOptions = {}): AsyncIterable<Project> {
      return http.paginate({
        method: 'GET',
        route: '/projects/search/:query',
        params: { query: text },
        query: { ...order },
        schema: projectSchema,
        ...options,
      });
    },

    get(project: ProjectRef, options: CallOptions = {}): Promise<Project> {
      return http.request({
        method: 'GET',
        route: '/projects/:id',
        params: { id: project },
        schema: projectSchema,
        ...options,
      });
    },

    /** The activity feed, newest first. */
    events(project: ProjectRef, options: ListOptions = {}): AsyncIterable<ProjectEvent> {
      return http.paginate({
        method: 'GET',
        route: '/projects/:id/events',
        params: { id: project },
        ...options,
      });
    },

    /** Owned by the caller. Not retried: a lost answer is `ambiguous`, look the project up first. */
    create(project: NewProject, options: CallOptions = {}): Promise<Project> {
      return http.request({
        method: 'POST',
        route: '/projects',
        body: { ...project },
        schema: projectSchema,
        ...options,
      });
    },

    /** Admin only: a project owned by another user. */
    createForUser(userId: number, project: NewUserProject, options: CallOptions = {}): Promise<Project> {
      return http.request({
        method: 'POST',
        route: '/projects/user/:user_id',
        params: { user_id: userId },
        body: { ...project },
        schema: projectSchema,
        ...options,
      });
    },

    update(project: ProjectRef, edit: ProjectEdit, options: CallOptions = {}): Promise<Project> {
      return http.request({
        method: 'PUT',
        route: '/projects/:id',
        params: { id: project },
        body: { ...edit },
        schema: projectSchema,
        ...options,
      });
    },

    /**
     * Forks into the caller's namespace. docs/api-v3.md#projects does not show the answer; real 8.x servers
     * answer the new project, which is what this returns.
     */
    fork(project: ProjectRef, options: CallOptions = {}): Promise<Project> {
      return http.request({
        method: 'POST',
        route: '/projects/fork/:id',
        params: { id: project },
        schema: projectSchema,
        ...options,
      });
    },

    /** 304 (already starred) is `{ changed: false }`. */
    star(project: ProjectRef, options: CallOptions = {}): Promise<Change<Project>> {
      return http.requestChange({
        method: 'POST',
        route: '/projects/:id/star',
        params: { id: project },
        schema: projectSchema,
        idempotent: true,
        ...options,
      });
    },

    /** 304 (not starred) is `{ changed: false }`. */
    unstar(project: ProjectRef, options: CallOptions = {}): Promise<Change<Project>> {
      return http.requestChange({
        method: 'DELETE',
        route: '/projects/:id/star',
        params: { id: project },
        schema: projectSchema,
        ...options,
      });
    },

    /** Admin or owner; idempotent (archiving an archived project answers 201 again). */
    archive(project: ProjectRef, options: CallOptions = {}): Promise<Project> {
      return http.request({
        method: 'POST',
        route: '/projects/:id/archive',
        params: { id: project },
        schema: projectSchema,
        idempotent: true,
        ...options,
      });
    },

    /**
     * Admin or owner; idempotent. docs/api-v3.md#projects is ambiguous here (its table says `POST .../archive`,
     * its sample request `.../unarchive`); real servers route `POST /projects/:id/unarchive`, and
     * the other reading would archive instead, so this follows the real servers.
     */
    unarchive(project: ProjectRef, options: CallOptions = {}): Promise<Project> {
      return http.request({
        method: 'POST',
        route: '/projects/:id/unarchive',
        params: { id: project },
        schema: projectSchema,
        idempotent: true,
        ...options,
      });
    },

    /** Removes the project and everything in it. The answer body is not shown: nothing is returned. */
    async remove(project: ProjectRef, options: CallOptions = {}): Promise<void> {
      await http.request({ method: 'DELETE', route: '/projects/:id', params: { id: project }, ...options });
    },

    /** Admin only: records that `project` is a fork of `forkedFromId` (both exist already). */
    async addForkRelation(
      project: ProjectRef,
      forkedFromId: number,
      options: CallOptions = {},
    ): Promise<void> {
      await http.request({
        method: 'POST',
        route: '/projects/:id/fork/:forked_from_id',
        params: { id: project, forked_from_id: forkedFromId },
        ...options,
      });
    },

    /** Admin only: forgets the forked-from relation. */
    async removeForkRelation(project: ProjectRef, options: CallOptions = {}): Promise<void> {
      await http.request({
        method: 'DELETE',
        route: '/projects/:id/fork',
        params: { id: project },
        ...options,
      });
    },

    /**
     * Uploads a file for use in a description or comment (`markdown` is the link to paste).
     * docs/api-v3.md#projects does not show the encoding; real servers read multipart field `file`.
     */
    upload(project: ProjectRef, file: UploadFile, options: CallOptions = {}): Promise<UploadResult> {
      const form = new FormData();
      const blob = new Blob([file.content], { type: file.contentType ?? 'application/octet-stream' });
      form.append('file', blob, file.filename);
      return http.request({
        method: 'POST',
        route: '/projects/:id/uploads',
        params: { id: project },
        body: form,
        ...options,
      });
    },
  };
}
