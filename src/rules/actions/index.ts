/** Every action, by name: the rule grammar, the compiler, `check` and the reference read this. */
import type { AnyActionDefinition } from '../engine/define-action.ts';
import { assign } from './assign.ts';
import { cancelMerge } from './cancel-merge.ts';
import { close } from './close.ts';
import { dequeue } from './dequeue.ts';
import { comment } from './comment.ts';
import { label } from './label.ts';
import { merge } from './merge.ts';
import { mergeWhenBuildSucceeds } from './merge-when-build-succeeds.ts';
import { move } from './move.ts';
import { queue } from './queue.ts';
import { reopen } from './reopen.ts';
import { status } from './status.ts';
import { subscribe } from './subscribe.ts';
import { unassign } from './unassign.ts';
import { unsubscribe } from './unsubscribe.ts';

export const actionDefinitions: readonly AnyActionDefinition[] = [
  label,
  comment,
  close,
  reopen,
  assign,
  unassign,
  move,
  status,
  merge,
  mergeWhenBuildSucceeds,
  queue,
  dequeue,
  cancelMerge,
  subscribe,
  unsubscribe,
];

export const actionsByName: ReadonlyMap<string, AnyActionDefinition> = new Map(
  actionDefinitions.map((definition) => [definition.name, definition]),
);
