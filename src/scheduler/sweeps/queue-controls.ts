/**
 * An operator's controls of the merge queues (docs/merge-queue.md#steering-the-queue), for the ops
 * port's POST endpoints and `hookbot queue`: pause a queue (a release freeze), resume it, take a
 * merge request out with a reason, move one to the front.
 *
 * - Paused: the queue's driver does nothing for it (merge-queue.ts asks `queuePause` under each
 *   step's lock): nothing is pushed, built or landed, nobody is taken out, entries keep their
 *   places, and new merge requests still enter at the end. A step already under way when the pause
 *   is written finishes. Resumed: the clocks of what was being tested start again (`testingSince`
 *   of the serial head, `pushedAt` of a train's cars), so a freeze never times anything out, and
 *   the queue is woken.
 * - Removed: the entry's `left` memory at the merge request's head, as the queue's own removals (a
 *   push, its rule matching anew, or a member's new comment command lets it in), and one comment
 *   naming the operator and the reason; reason code `operator`.
 * - Fronted: `front: { by, at }` on the entry: fronted entries go first, the latest fronted first
 *   (state/queue-order.ts). A train's cars no longer chain in the new order and are rebuilt.
 *
 * Removal and front run under the queue's train lock and the merge request's item lock, the locks
 * the drivers hold while they write entries, so neither writes over the other.
 */
import type { QueueControl, QueueEntry, StateStore } from '../../state/index.ts';
import { pauseText, queueKeyOf, queueShape, queuesOf } from '../../state/index.ts';
import {
  leaveAt,
  noQueueEvents,
  runOutbox,
  toOutbox,
  type CallReport,
  type Executor,
  type PlannedCall,
  type QueueEvents,
} from '../../rules/index.ts';
import { ApiError, type Client } from '../../api/index.ts';
import type { SweepLog } from '../types.ts';
import type { QueueItemReport } from './merge-queue-report.ts';

export interface QueueControlsDeps {
  client: {
    mergeRequests: Pick<Client['mergeRequests'], 'get' | 'list'>;
    projects: Pick<Client['projects'], 'get'>;
    branches: Pick<Client['branches'], 'get'>;
  };
  store: Pick<
    StateStore,
    'queued' | 'enqueue' | 'queueControls' | 'setQueueControl' | 'putAction' | 'getAction'
  >;
  executor: Executor;
  now: () => number;
  /** Wakes the merge queue sweep (after a resume, a removal, a move to the front). */
  wake?: () => void;
  /** The queue's story and metrics (rules/queue/queue-events.ts): an operator's removal is told there. */
  events?: QueueEvents;
  log: SweepLog;
}

/** A queue as an operator names it: `default` unless named. */
export interface QueueAddress {
  project: string;
  targetBranch: string;
  queue?: string;
}

/** A merge request as an operator names it: its project and the number people see. */
export interface MergeRequestAddress {
  project: string;
  iid: number;
}

export type ControlAnswer =
  { ok: true; message: string } | { ok: false; status: 400 | 404 | 409; message: string };

/** One queue as `hookbot queue list` and the ops port's listing show it. */
export interface QueueListing {
  project: string;
  projectId: number;
  targetBranch: string;
  queue: string;
  paused?: { by: string; reason: string; at: number };
  entries: {
    position: number;
    iid: number;
    itemKey: string;
    enqueuedAt: number;
    priority: number;
    front?: { by: string; at: number };
  }[];
}

const refused = (status: 400 | 404 | 409, message: string): ControlAnswer => ({ ok: false, status, message });
const short = (sha: string): string => sha.slice(0, 7);

/** The pause of the queue `key` (state/queue-order.ts `queueKeyOf`), if it is paused. */
function queuePause(
  store: Pick<StateStore, 'queueControls'>,
  key: string,
): QueueControl['paused'] | undefined {
  return store
    .queueControls()
    .find((control) => queueKeyOf(control.project, control.targetBranch, control.queue) === key)?.paused;
}

/**
 * The step of a paused queue's head (merge-queue.ts asks it before each step, and again under the
 * step's lock, so a pause written during a run holds from the next step on): it waits, saying why.
 */
export function pausedStep(
  store: Pick<StateStore, 'queueControls'>,
  key: string,
  entry: QueueEntry,
): QueueItemReport | undefined {
  const pause = queuePause(store, key);
  if (!pause) return undefined;
  const { itemKey, project, queue, targetBranch } = entry;
  return {
    itemKey,
    project,
    queue,
    targetBranch,
    outcome: 'waiting',
    detail: `the queue is ${pauseText(pause)}`,
  };
}

export interface QueueControls {
  list(): QueueListing[];
  pause(address: QueueAddress, by: string, reason: string): Promise<ControlAnswer>;
  resume(address: QueueAddress, by: string): Promise<ControlAnswer>;
  remove(address: MergeRequestAddress, by: string, reason: string): Promise<ControlAnswer>;
  front(address: MergeRequestAddress, by: string): Promise<ControlAnswer>;
}

export function createQueueControls(deps: QueueControlsDeps): QueueControls {
  const { store, executor, client } = deps;
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

  function list(): QueueListing[] {
    const listings = new Map<string, QueueListing>();
    for (const [key, group] of queuesOf(store.queued())) {
      const head = group[0]!;
      listings.set(key, {
        project: head.project,
        projectId: head.projectId,
        targetBranch: head.targetBranch,
        queue: head.queue,
        entries: group.map((entry, index) => ({
          position: index + 1,
          iid: entry.iid,
          itemKey: entry.itemKey,
          enqueuedAt: entry.enqueuedAt,
          priority: entry.priority,
          ...(entry.front ? { front: entry.front } : {}),
        })),
      });
    }
    for (const control of store.queueControls()) {
      const key = queueKeyOf(control.project, control.targetBranch, control.queue);
      const listing = listings.get(key) ?? {
        project: control.project,
        projectId: control.projectId,
        targetBranch: control.targetBranch,
        queue: control.queue,
        entries: [],
      };
      if (control.paused) listing.paused = control.paused;
      listings.set(key, listing);
    }
    return [...listings.values()].sort(
      (a, b) =>
        a.project.localeCompare(b.project) ||
        a.targetBranch.localeCompare(b.targetBranch) ||
        a.queue.localeCompare(b.queue),
    );
  }

  /** The queue's project id and canonical path: from its entries or control, else from the server. */
  async function project(
    address: QueueAddress,
  ): Promise<{ id: number; path: string } | { error: ControlAnswer }> {
    const name = address.queue ?? 'default';
    const known =
      store.queued().find((e) => same(e.project, address.project)) ??
      store.queueControls().find((c) => same(c.project, address.project));
    if (known) return { id: known.projectId, path: known.project };
    try {
      const found = await client.projects.get(address.project);
      await client.branches.get(found.id, address.targetBranch);
      return { id: found.id, path: found.path_with_namespace };
    } catch (error) {
      if (error instanceof ApiError && error.status === 404)
        return {
          error: refused(
            404,
            `unknown queue: no ${name} queue for ${address.targetBranch} in ${address.project}, and the server knows no such project or branch`,
          ),
        };
      throw error;
    }
  }

  async function pause(address: QueueAddress, by: string, reason: string): Promise<ControlAnswer> {
    const name = address.queue ?? 'default';
    const found = await project(address);
    if ('error' in found) return found.error;
    const paused = { by, reason, at: deps.now() };
    await store.setQueueControl({
      project: found.path,
      projectId: found.id,
      targetBranch: address.targetBranch,
      queue: name,
      paused,
    });
    deps.log.info({ project: found.path, queue: name, by }, `merge queue: paused: ${reason}`);
    return {
      ok: true,
      message: `the ${name} queue for ${address.targetBranch} in ${found.path} is ${pauseText(paused)}; nothing lands until it is resumed`,
    };
  }

  async function resume(address: QueueAddress, by: string): Promise<ControlAnswer> {
    const name = address.queue ?? 'default';
    const key = queueKeyOf(address.project, address.targetBranch, name);
    const control = store.queueControls().find((c) => queueKeyOf(c.project, c.targetBranch, c.queue) === key);
    if (!control?.paused) {
      const exists = queuesOf(store.queued()).has(key);
      return exists
        ? refused(409, `the ${name} queue for ${address.targetBranch} in ${address.project} is not paused`)
        : refused(
            404,
            `unknown queue: no paused ${name} queue for ${address.targetBranch} in ${address.project}`,
          );
    }
    await locked(key, async () => {
      const { paused: _lifted, ...lifted } = control;
      await store.setQueueControl(lifted);
      // The clocks of what was under test start again: a freeze times nothing out.
      const now = deps.now();
      for (const entry of queuesOf(store.queued()).get(key) ?? []) {
        const car = entry.car?.pushedAt !== undefined ? { ...entry.car, pushedAt: now } : entry.car;
        if (entry.testingSince === undefined && car === entry.car) continue;
        await store.enqueue({
          ...entry,
          ...(entry.testingSince !== undefined ? { testingSince: now } : {}),
          ...(car ? { car } : {}),
        });
      }
    });
    deps.log.info({ project: control.project, queue: name, by }, 'merge queue: resumed');
    deps.wake?.();
    return {
      ok: true,
      message: `the ${name} queue for ${address.targetBranch} in ${control.project} is resumed (it was ${pauseText(control.paused)})`,
    };
  }

  /** The entry of a merge request in a queue, or why there is none. */
  async function entryOf(address: MergeRequestAddress): Promise<QueueEntry | ControlAnswer> {
    const mine = store.queued().filter((e) => same(e.project, address.project) && e.iid === address.iid);
    const held = mine.find((e) => !e.left);
    if (held) return held;
    const left = mine[0]?.left;
    if (left)
      return refused(
        409,
        `${address.project}!${address.iid} is not in the queue: it left the ${mine[0]!.queue} queue at ${short(left.sha)}: ${left.reason}`,
      );
    try {
      for await (const _mr of client.mergeRequests.list(address.project, { iid: address.iid }))
        return refused(409, `${address.project}!${address.iid} is not in the queue: it is in no merge queue`);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    }
    return refused(404, `unknown merge request: ${address.project} has no merge request !${address.iid}`);
  }

  async function remove(address: MergeRequestAddress, by: string, reason: string): Promise<ControlAnswer> {
    const found = await entryOf(address);
    if ('ok' in found) return found;
    const key = queueKeyOf(found.project, found.targetBranch, found.queue);
    const outcome = await locked(key, () =>
      executor.runs.run(found.itemKey, async (): Promise<ControlAnswer> => {
        const entry = store.queued().find((e) => e.itemKey === found.itemKey && !e.left);
        if (!entry) return refused(409, `${address.project}!${address.iid} is not in the queue any more`);
        let sha = entry.pinnedSha ?? '';
        let seen: { title?: string; state?: string; sha?: string | null } | undefined;
        try {
          const mr = await client.mergeRequests.get(entry.projectId, entry.mrId);
          sha = mr.sha ?? sha;
          seen = { title: mr.title, state: mr.state, sha: mr.sha };
        } catch (error) {
          if (!(error instanceof ApiError && error.status === 404)) throw error;
        }
        const why = `removed by operator ${by}: ${reason}`;
        const body = `Removed from the ${entry.queue} merge queue for \`${entry.targetBranch}\` by the operator ${by}: ${reason}. It enters again at the end after a push, once its rule stops matching and matches again, or on a member's new comment command.`;
        const planned: PlannedCall = {
          action: 'comment',
          rule: entry.rule,
          reason: `merge queue: ${why}`,
          call: {
            op: 'notes.createMergeRequestNote',
            args: { project: entry.projectId, merge_request_id: entry.mrId, body },
          },
        };
        // As the queue's own removals: the comment in the outbox before the memory is written.
        const outbox = { store, executor, now: deps.now };
        const id = await toOutbox(outbox, entry.itemKey, {
          v: 1,
          planned,
          project: entry.project,
          trigger: { kind: 'merge_request', action: 'update', byBot: false },
          origin: 'merge_queue',
        });
        const at = deps.now();
        await leaveAt(store, entry, sha, why, at);
        const call: CallReport = await runOutbox(outbox, id);
        await (deps.events ?? noQueueEvents).removed(
          entry,
          { code: 'operator', reason: why, comment: { body, posted: call.status === 'done' } },
          seen,
        );
        deps.log.info(
          { itemKey: entry.itemKey, queue: entry.queue, code: 'operator', by },
          `merge queue: ${why}`,
        );
        return {
          ok: true,
          message: `${entry.project}!${entry.iid} removed from the ${entry.queue} queue for ${entry.targetBranch}: ${reason} (comment: ${call.status})`,
        };
      }),
    );
    if (outcome.ok) deps.wake?.();
    return outcome;
  }

  async function front(address: MergeRequestAddress, by: string): Promise<ControlAnswer> {
    const found = await entryOf(address);
    if ('ok' in found) return found;
    const key = queueKeyOf(found.project, found.targetBranch, found.queue);
    const outcome = await locked(key, () =>
      executor.runs.run(found.itemKey, async (): Promise<ControlAnswer> => {
        const entry = store.queued().find((e) => e.itemKey === found.itemKey && !e.left);
        if (!entry) return refused(409, `${address.project}!${address.iid} is not in the queue any more`);
        // Strictly later than any other fronted entry of the queue: the latest fronted goes first.
        const group = queuesOf(store.queued()).get(key) ?? [];
        const latest = Math.max(0, ...group.map((e) => e.front?.at ?? 0));
        await store.enqueue({ ...entry, front: { by, at: Math.max(deps.now(), latest + 1) } });
        await creditDisplacedHead(group, entry);
        deps.log.info({ itemKey: entry.itemKey, queue: entry.queue, by }, 'merge queue: moved to the front');
        return {
          ok: true,
          message: `${entry.project}!${entry.iid} moved to the front of the ${entry.queue} queue for ${entry.targetBranch}`,
        };
      }),
    );
    if (outcome.ok) deps.wake?.();
    return outcome;
  }

  /**
   * A serial queue's head that an operator's move to the front displaces will find the target moved
   * (by the merge request put before it) and bring its branch up again: that update is the operator's
   * choice, not the target's traffic, so it is given back and does not count against `max_updates`
   * (docs/merge-queue.md#steering-the-queue). A train rebuilds its cars instead and counts nothing.
   */
  async function creditDisplacedHead(group: QueueEntry[], fronted: QueueEntry): Promise<void> {
    const head = group[0];
    if (!head || head.itemKey === fronted.itemKey || queueShape(group).train) return;
    if (head.pinnedSha === undefined || head.updates === 0) return;
    await store.enqueue({ ...head, updates: head.updates - 1 });
  }

  /** Under the queue's train lock (merge-queue.ts takes it to drive a train). */
  function locked<T>(key: string, work: () => Promise<T>): Promise<T> {
    return executor.runs.run(`merge-train:${key}`, work);
  }

  return { list, pause, resume, remove, front };
}
