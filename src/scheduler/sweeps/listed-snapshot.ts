/**
 * Snapshots of items a sweep has listed (page by page), reading only what the rules at hand need:
 * a sweep over 10,000 merge requests must cost its listing pages, not 10,000 more calls.
 *
 * - The head commit's statuses (one call per merge request, two on servers whose merge requests
 *   carry no `sha`) only when a rule reads them: a `statuses` condition, a merge, a
 *   merge-when-build-succeeds or status action, or a summary status.
 * - Changed files only for `files` conditions (as the rule set's own needs say).
 * - The author's access level (the members API) only for `author_access` conditions and the gate
 *   of merge-like actions on merge requests (docs/rules.md#members-commands), as the rule set's
 *   needs say; read afresh for each snapshot. A sweep's trigger is no comment: no actor to read.
 * - Comment markers never up front: the executor looks for its marker before posting anyway, and
 *   the rule sweep reads them for the few items whose whole plan is comments (where they decide
 *   whether the item is touched at all).
 */
import {
  type BotIdentity,
  type CompiledRule,
  createSnapshotReader,
  type ItemSnapshot,
  type ProjectRef,
  type SnapshotClient,
  type SnapshotReader,
  type Trigger,
} from '../../rules/index.ts';
import type { Issue, MergeRequest } from '../../api/index.ts';

export interface SweepNeeds {
  head: boolean;
  changedFiles: boolean;
  commentMarkers: boolean;
  /** `author_access` conditions. */
  authorAccess: boolean;
  /** Merge-like actions on merge requests: their gate reads the author's access. */
  mergeGate: boolean;
}

const HEAD_ACTIONS = new Set(['merge', 'merge_when_build_succeeds', 'status']);

export function needsOf(rules: readonly CompiledRule[]): SweepNeeds {
  return {
    head: rules.some(
      (rule) =>
        rule.conditionNames.has('statuses') ||
        rule.summaryStatus !== null ||
        rule.actions.some((action) => HEAD_ACTIONS.has(action.name)),
    ),
    changedFiles: rules.some((rule) => rule.conditionNames.has('files')),
    commentMarkers: false,
    authorAccess: rules.some((rule) => rule.conditionNames.has('author_access')),
    mergeGate: rules.some((rule) => rule.actions.some((action) => action.authority !== undefined)),
  };
}

export type ListedItem = { kind: 'issue'; item: Issue } | { kind: 'merge_request'; item: MergeRequest };

export interface ListedSnapshots {
  of(listed: ListedItem, trigger: Trigger, needs: SweepNeeds): Promise<ItemSnapshot>;
  /** A project as the server listed it: its items' snapshots need no read of it (read-snapshot.ts). */
  rememberProject(project: ProjectRef): void;
}

async function* nothing(): AsyncIterable<never> {}

/**
 * `reader` reads with every head read (the one the rest of the bot uses); the head-free one is
 * the same reader over a client whose status listing is empty, its result marked "not read"
 * (`statuses: null`), which is what the engine expects of statuses nobody read.
 * TODO(rules): replace with a `headStatuses: false` need of read-snapshot.ts once it has one.
 */
export function createListedSnapshots(
  client: SnapshotClient,
  reader: SnapshotReader,
  bot?: BotIdentity,
): ListedSnapshots {
  const headFree = createSnapshotReader(
    { ...client, statuses: { ...client.statuses, list: () => nothing() } },
    bot ? { bot } : {},
  );
  return {
    rememberProject(project) {
      reader.rememberProject(project);
      headFree.rememberProject(project);
    },
    async of(listed, trigger, needs) {
      const wanted = {
        changedFiles: needs.changedFiles,
        commentMarkers: needs.commentMarkers,
        authorAccess: needs.authorAccess,
        mergeGate: needs.mergeGate,
      };
      // One reader per kind of needs, so a run reads each project's path once (the readers cache it).
      const source = needs.head ? reader : headFree;
      if (listed.kind === 'issue') return source.fromIssue(listed.item, trigger, wanted);
      const snapshot = await source.fromMergeRequest(listed.item, trigger, wanted);
      return needs.head || snapshot.kind !== 'merge_request' ? snapshot : { ...snapshot, statuses: null };
    },
  };
}
