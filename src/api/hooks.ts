/**
 * Project hooks (docs/api-v3.md#project-hooks): the bot registers and checks its own web hook here.
 */
import { z } from 'zod';
import type { Http } from './http.ts';
import type { CallOptions, ListOptions, ProjectRef } from './types.ts';

/** docs/api-v3.md#project-hooks samples the flags as the strings `"true"`/`"false"`, real servers send booleans: read both. */
const flag = z
  .union([z.boolean(), z.enum(['true', 'false'])])
  .transform((value) => value === true || value === 'true');

export const projectHookSchema = z
  .looseObject({
    id: z.number(),
    url: z.string(),
    project_id: z.number(),
    push_events: flag,
    issues_events: flag,
    merge_requests_events: flag,
    note_events: flag,
    enable_ssl_verification: flag,
    /** Accepted on write; sent back by real servers, not by the samples of docs/api-v3.md#project-hook. */
    tag_push_events: flag.optional(),
    /** Later 8.x servers only. */
    build_events: flag.optional(),
    pipeline_events: flag.optional(),
    wiki_page_events: flag.optional(),
    created_at: z.string(),
  })
  // Real servers never send the secret back; should one echo it, it must not reach a log through us.
  .transform(({ token: _token, ...hook }) => hook);
export type ProjectHook = z.infer<typeof projectHookSchema>;

export interface HookSettings {
  url: string;
  push_events?: boolean;
  issues_events?: boolean;
  merge_requests_events?: boolean;
  tag_push_events?: boolean;
  note_events?: boolean;
  /** Later 8.x servers only; older ones ignore it. */
  build_events?: boolean;
  /** Later 8.x servers only; older ones ignore it. */
  pipeline_events?: boolean;
  enable_ssl_verification?: boolean;
  /**
   * The hook's secret, which real servers send in `X-Gitlab-Token` with each delivery. Not in
   * docs/api-v3.md#project-hooks; write-only (never returned).
   */
  token?: string;
}

const HOOK = '/projects/:id/hooks/:hook_id';
const deleteAnswer = projectHookSchema.nullish();

export function createHooksApi(http: Http) {
  return {
    list(project: ProjectRef, options: ListOptions = {}): AsyncIterable<ProjectHook> {
      return http.paginate({
        method: 'GET',
        route: '/projects/:id/hooks',
        params: { id: project },
        schema: projectHookSchema,
        ...options,
      });
    },

    get(project: ProjectRef, hookId: number, options: CallOptions = {}): Promise<ProjectHook> {
      return http.request({
        method: 'GET',
        route: HOOK,
        params: { id: project, hook_id: hookId },
        schema: projectHookSchema,
        ...options,
      });
    },

    /**
     * Not retried: a second POST would add a second hook (list the hooks after an `ambiguous` error).
     * An invalid URL is an error whose status docs/api-v3.md#project-hooks does not show (v3 on 9.x servers: 422).
     */
    create(project: ProjectRef, hook: HookSettings, options: CallOptions = {}): Promise<ProjectHook> {
      return http.request({
        method: 'POST',
        route: '/projects/:id/hooks',
        params: { id: project },
        body: { ...hook },
        schema: projectHookSchema,
        ...options,
      });
    },

    /** `url` is required on edit too (docs/api-v3.md#project-hooks). */
    update(
      project: ProjectRef,
      hookId: number,
      hook: HookSettings,
      options: CallOptions = {},
    ): Promise<ProjectHook> {
      return http.request({
        method: 'PUT',
        route: HOOK,
        params: { id: project, hook_id: hookId },
        body: { ...hook },
        schema: projectHookSchema,
        ...options,
      });
    },

    /** Idempotent: the answer is the removed hook, or empty when there was none to remove. */
    async remove(
      project: ProjectRef,
      hookId: number,
      options: CallOptions = {},
    ): Promise<ProjectHook | undefined> {
      const hook = await http.request({
        method: 'DELETE',
        route: HOOK,
        params: { id: project, hook_id: hookId },
        schema: deleteAnswer,
        ...options,
      });
      return hook ?? undefined;
    },
  };
}
