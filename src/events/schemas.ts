/**
 * Typed hook payloads of that era (8.x), one schema per `object_kind`. They check the fields the bot
 * reads and let every other field through: a payload is a hint, the fresh state comes from the API.
 * Issue and MR payloads of that era carry no `labels` and no `changes` (docs/server-behaviour.md#hook-payloads).
 */
import { z } from 'zod';

const id = z.number().int();
/** Some 8.x payloads send numeric ids as strings (e.g. source_project_id). */
const idLike = z.union([id, z.string().regex(/^\d+$/).transform(Number)]);
const hookUser = z.looseObject({
  name: z.string().optional(),
  username: z.string().optional(),
  avatar_url: z.string().nullable().optional(),
});
const hookProject = z.looseObject({
  name: z.string().optional(),
  path_with_namespace: z.string().optional(),
  web_url: z.string().optional(),
});

export const issueHookSchema = z.looseObject({
  object_kind: z.literal('issue'),
  user: hookUser.optional(),
  project: hookProject.optional(),
  object_attributes: z.looseObject({
    id,
    iid: id.optional(),
    project_id: id,
    title: z.string().optional(),
    state: z.string().optional(),
    author_id: id.optional(),
    confidential: z.boolean().optional(),
    created_at: z.string().optional(),
    updated_at: z.string().optional(),
    action: z.string().optional(),
  }),
});

export const mergeRequestHookSchema = z.looseObject({
  object_kind: z.literal('merge_request'),
  user: hookUser.optional(),
  project: hookProject.optional(),
  object_attributes: z.looseObject({
    id,
    iid: id.optional(),
    target_project_id: idLike,
    source_project_id: idLike.optional(),
    source_branch: z.string().optional(),
    target_branch: z.string().optional(),
    state: z.string().optional(),
    author_id: id.optional(),
    work_in_progress: z.boolean().optional(),
    last_commit: z.looseObject({ id: z.string() }).nullable().optional(),
    oldrev: z.string().optional(),
    created_at: z.string().optional(),
    updated_at: z.string().optional(),
    action: z.string().optional(),
  }),
});

export const noteHookSchema = z.looseObject({
  object_kind: z.literal('note'),
  user: hookUser.optional(),
  project_id: id,
  project: hookProject.optional(),
  object_attributes: z.looseObject({
    id,
    note: z.string(),
    noteable_type: z.string(),
    author_id: id.optional(),
    noteable_id: id.nullable().optional(),
    commit_id: z.string().nullable().optional(),
    system: z.boolean().optional(),
    created_at: z.string().optional(),
  }),
  issue: z.looseObject({ id, iid: id.optional() }).optional(),
  merge_request: z.looseObject({ id, iid: id.optional(), source_branch: z.string().optional() }).optional(),
  commit: z.looseObject({ id: z.string() }).optional(),
  snippet: z.looseObject({ id }).optional(),
});

export const pushHookSchema = z.looseObject({
  object_kind: z.enum(['push', 'tag_push']),
  before: z.string(),
  after: z.string(),
  ref: z.string(),
  checkout_sha: z.string().nullable().optional(),
  user_id: id.optional(),
  user_name: z.string().optional(),
  user_email: z.string().optional(),
  project_id: id,
  project: hookProject.optional(),
  commits: z
    .array(
      z.looseObject({ id: z.string(), message: z.string().optional(), timestamp: z.string().optional() }),
    )
    .optional(),
  total_commits_count: z.number().optional(),
});

export const buildHookSchema = z.looseObject({
  object_kind: z.literal('build'),
  ref: z.string(),
  tag: z.boolean().optional(),
  before_sha: z.string().optional(),
  sha: z.string(),
  build_id: id.optional(),
  build_name: z.string().optional(),
  build_stage: z.string().optional(),
  build_status: z.string(),
  project_id: id,
  project_name: z.string().optional(),
  user: z.looseObject({ id: id.optional(), name: z.string().optional() }).optional(),
});

export const pipelineHookSchema = z.looseObject({
  object_kind: z.literal('pipeline'),
  object_attributes: z.looseObject({
    id,
    ref: z.string().nullable().optional(),
    tag: z.boolean().optional(),
    sha: z.string(),
    before_sha: z.string().optional(),
    status: z.string(),
  }),
  user: hookUser.optional(),
  project: hookProject.optional(),
  commit: z.looseObject({ id: z.string() }).optional(),
});

export const wikiPageHookSchema = z.looseObject({
  object_kind: z.literal('wiki_page'),
  user: hookUser.optional(),
  project: hookProject.optional(),
  object_attributes: z.looseObject({
    title: z.string().optional(),
    action: z.string().optional(),
    slug: z.string().optional(),
  }),
});

export const hookSchemas = {
  issue: issueHookSchema,
  merge_request: mergeRequestHookSchema,
  note: noteHookSchema,
  push: pushHookSchema,
  tag_push: pushHookSchema,
  build: buildHookSchema,
  pipeline: pipelineHookSchema,
  wiki_page: wikiPageHookSchema,
} as const;

export type IssueHook = z.infer<typeof issueHookSchema>;
export type MergeRequestHook = z.infer<typeof mergeRequestHookSchema>;
export type NoteHook = z.infer<typeof noteHookSchema>;
export type PushHook = z.infer<typeof pushHookSchema>;
export type BuildHook = z.infer<typeof buildHookSchema>;
export type PipelineHook = z.infer<typeof pipelineHookSchema>;
export type WikiPageHook = z.infer<typeof wikiPageHookSchema>;

export type HookEvent =
  | { kind: 'issue'; payload: IssueHook }
  | { kind: 'merge_request'; payload: MergeRequestHook }
  | { kind: 'note'; payload: NoteHook }
  | { kind: 'push' | 'tag_push'; payload: PushHook }
  | { kind: 'build'; payload: BuildHook }
  | { kind: 'pipeline'; payload: PipelineHook }
  | { kind: 'wiki_page'; payload: WikiPageHook };

export type HookKind = HookEvent['kind'];

/** Parses a delivery body into a typed event; the error names the first field that does not fit. */
export function parseHookEvent(
  kind: string,
  body: unknown,
): { ok: true; event: HookEvent } | { ok: false; message: string } {
  if (!Object.hasOwn(hookSchemas, kind)) return { ok: false, message: `unknown object_kind "${kind}"` };
  const schema = hookSchemas[kind as HookKind];
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      ok: false,
      message: `${kind} payload: ${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid'}`,
    };
  }
  return { ok: true, event: { kind, payload: parsed.data } as HookEvent };
}
