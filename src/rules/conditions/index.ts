/** Every condition, by name: the rule grammar, the compiler, `check` and the reference read this. */
import type { ConditionDefinition } from '../engine/define-condition.ts';
import { actor } from './actor.ts';
import { actorAccess } from './actor-access.ts';
import { all } from './all.ts';
import { any } from './any.ts';
import { assignee } from './assignee.ts';
import { author } from './author.ts';
import { authorAccess } from './author-access.ts';
import { created } from './created.ts';
import { description } from './description.ts';
import { downvotes } from './downvotes.ts';
import { event } from './event.ts';
import { files } from './files.ts';
import { labels } from './labels.ts';
import { mergeStatus } from './merge-status.ts';
import { mergeWhenBuildSucceeds } from './merge-when-build-succeeds.ts';
import { milestone } from './milestone.ts';
import { not } from './not.ts';
import { note } from './note.ts';
import { sourceBranch } from './source-branch.ts';
import { state } from './state.ts';
import { statuses } from './statuses.ts';
import { targetBranch } from './target-branch.ts';
import { title } from './title.ts';
import { upvotes } from './upvotes.ts';
import { updated } from './updated.ts';
import { workInProgress } from './work-in-progress.ts';

/** In reference order: nesting first, then the item's fields, then the event. */
export const conditionDefinitions: readonly ConditionDefinition[] = [
  all,
  any,
  not,
  title,
  description,
  state,
  labels,
  author,
  authorAccess,
  assignee,
  milestone,
  sourceBranch,
  targetBranch,
  workInProgress,
  mergeStatus,
  mergeWhenBuildSucceeds,
  upvotes,
  downvotes,
  created,
  updated,
  files,
  statuses,
  event,
  note,
  actor,
  actorAccess,
];

export const conditionsByName: ReadonlyMap<string, ConditionDefinition> = new Map(
  conditionDefinitions.map((definition) => [definition.name, definition]),
);
