/**
 * Hook payloads in the form of that era (GitLab 8.x, docs/server-behaviour.md#hook-payloads and the official
 * samples kept in test/fixtures/hooks/), built from the sandbox's records. Where the samples and the 8.x source
 * disagree, the samples win for the key sets (they are what receivers were written against) and the
 * source decides the values; each such choice is noted where it is made.
 *
 * Differences from the samples, on purpose:
 * - `oldrev` appears in a merge request's `object_attributes` only when a push caused the update (8.x).
 * - `assignee` (issue: top level; merge request: inside `object_attributes`, as in its sample) appears
 *   only when one is assigned (8.x `to_hook_data`).
 * - Avatars are `null`: the sandbox has no avatar service, and its API answers `avatar_url: null` too.
 * - Issue and merge request timestamps use the payload form `2013-12-03 17:15:43 UTC` (docs/server-behaviour.md#timestamps;
 *   what real servers sent) although the issue and merge request samples print ISO.
 *
 * One file per hook kind (issue, merge-request, note, push, pipeline, build), on the shared
 * attributes of `hook-attrs.ts` and the commit memo of `commit-memo.ts`. This file is the front door.
 */
export { issuePayload } from './issue.ts';
export { type MergeRequestAction, mergeRequestPayload } from './merge-request.ts';
export { notePayload } from './note.ts';
export { pushPayload } from './push.ts';
export {
  type CombinedStatus,
  combinedStatus,
  EXTERNAL_STAGE,
  latestOf,
  pipelinePayload,
} from './pipeline.ts';
export { buildPayload } from './build.ts';
export { loadCommit, rememberCommits } from './commit-memo.ts';
export { BLANK_SHA, payloadTime } from './hook-attrs.ts';
