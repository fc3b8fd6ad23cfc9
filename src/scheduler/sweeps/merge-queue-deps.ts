/** What the merge queue's driver (merge-queue.ts) needs, and lends its steps (serial-step.ts, queue-exits.ts). */
import type { StateStore } from '../../state/index.ts';
import type { Executor, ItemProcessorFn, QueueEvents } from '../../rules/index.ts';
import type { Client } from '../../api/index.ts';
import type { BranchUpdater } from '../../git/index.ts';
import type { SweepLog } from '../types.ts';
import type { TrainTails } from './train-deps.ts';

export interface MergeQueueDeps {
  client: {
    mergeRequests: Pick<Client['mergeRequests'], 'get'>;
    branches: Pick<Client['branches'], 'get'>;
    statuses: Pick<Client['statuses'], 'list'>;
    projects: Pick<Client['projects'], 'get'>;
    members: Pick<Client['members'], 'get' | 'getInGroup'>;
    notes: Pick<Client['notes'], 'listMergeRequestNotes'>;
  };
  /**
   * `fleet` where replicas share the state: a train's driver reloads the queue from the database
   * under the train's lock (merge-queue.ts).
   */
  store: Pick<
    StateStore,
    'queued' | 'enqueue' | 'dequeue' | 'putAction' | 'getAction' | 'queueControls' | 'fleet'
  >;
  executor: Executor;
  /** Absent: no git credentials are configured, and the queue cannot update branches. */
  updater: BranchUpdater | undefined;
  /** Clone over SSH (`ssh_url_to_repo`) rather than HTTP(S). */
  ssh?: boolean;
  /**
   * Evaluates a merge request again (the item processor), after someone else pushed to it: on its
   * new head its rule puts it back at the end of the queue, or not, whichever hook came first.
   */
  processItem?: ItemProcessorFn;
  now: () => number;
  log: SweepLog;
  /** How long a fork's approval settles before its head rides a train (merge-train.ts). */
  pushNoteLagMs?: number;
  /** Where each landing, removal, car and round is told (explain, metrics); default: nowhere. */
  events?: QueueEvents;
  /**
   * What a train's run left to the next run of its queue when news came (train-tail.ts), kept from
   * run to run (one per sweep set). Absent: every run finishes its own tail.
   */
  tails?: TrainTails;
}
