/** Keys shared by several kinds of call (each kind's file says which it uses). */
import type { ApiCall, CallOf } from '../../engine/planned-call.ts';
import { canonicalJson } from '../ids.ts';

/** Every argument counts: two calls differ when any argument does. */
export const argsKey = (call: ApiCall): string => canonicalJson(call.args);

/**
 * An edit of the item: every field of the edit counts. Label writes never reach a key: the plan
 * merges them into one write of the whole set first.
 */
export const editKey = (call: CallOf<'issues.update' | 'mergeRequests.update'>): string =>
  canonicalJson({ ...call.args.edit, labels: undefined });

/** A comment is the same comment when it carries the same marker (or, without one, the same text). */
export const commentKey = (call: CallOf<'notes.createIssueNote' | 'notes.createMergeRequestNote'>): string =>
  call.marker ?? call.args.body;

/**
 * A status: name, state and texts (the commit is the evaluated head, the same for every call of a
 * plan), and whether it is a repository rule's (marked: another status than the operator's).
 */
export const statusKey = (call: CallOf<'statuses.create'>): string =>
  canonicalJson([
    call.args.name,
    call.args.state,
    call.args.description ?? '',
    call.args.target_url ?? '',
    ...(call.args.repository ? ['repository'] : []),
  ]);
