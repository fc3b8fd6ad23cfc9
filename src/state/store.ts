/**
 * The state store's contract, backend-agnostic. Everything else in hookbot depends on this
 * interface only; the state file (file/: lowdb document + journal), PostgreSQL (postgres/, shared
 * by several replicas) and `createMemoryStore` implement it and run the same contract tests.
 *
 * Writes are async and resolve once the change is durable; reads are synchronous from memory,
 * because the whole (bounded) state is held in memory.
 *
 * Values given as `unknown` (delivery bodies, planned calls, decisions) are stored as JSON: what a
 * read returns is what `JSON.parse(JSON.stringify(value))` gives, before and after a restart alike.
 * Objects a read returns are the store's own (no copy, for speed): treat them as read-only. Inbox
 * entries are the exception: they are held as their JSON text and parsed anew on each read, so that
 * a backlog costs its text only (held-entry.ts).
 */

/** A delivery as the receiver hands it over. */
export interface Delivery {
  /** De-duplication key (v3 servers send no delivery id: the receiver derives it from the content). */
  key: string;
  /** The hook kind, e.g. `Merge Request Hook`. */
  kind: string;
  /** When the receiver got it (ms since the epoch). */
  receivedAt: number;
  /** Credentials (X-Gitlab-Token, Authorization, PRIVATE-TOKEN, Cookie) are dropped, never stored. */
  headers: Record<string, string>;
  body: unknown;
  /**
   * The body's JSON as received (its text, or its UTF-8 bytes), when the caller has it and has
   * checked that it parses to `body`: the store then keeps it instead of serialising `body` again.
   * On the hook route these are the received bytes: they go to the journal as they are. The store
   * keeps the Buffer until the delivery is processed: pass one that owns its memory (not a slice of
   * a larger buffer, which would be kept whole).
   */
  bodyJson?: string | Buffer;
}

/** An accepted delivery that is not processed yet. */
export interface InboxEntry extends Delivery {
  id: string;
  /** When the store accepted it (ms since the epoch). */
  acceptedAt: number;
}

/**
 * A pending delivery as processing holds it: the small part in memory, the body read when asked
 * (parsed from the stored text on each read, so nothing parsed outlives its reader). A backlog of
 * these costs its stored text and no more. `body` is undefined once the delivery is processed.
 */
export interface PendingDelivery {
  readonly id: string;
  readonly kind: string;
  /** When the receiver got it (ms since the epoch). */
  readonly receivedAt: number;
  readonly body: unknown;
}

export interface AcceptResult {
  /** The delivery's id; for a duplicate, the id of the delivery first accepted with that key. */
  id: string;
  /** True when the key was seen within the de-duplication window: nothing was added. */
  duplicate: boolean;
}

/**
 * A delivery given up on without being processed (issue 28): processes died while processing it, one
 * after the other, so it is set aside rather than given to the next process to die on. Its de-dup
 * key stays, so a redelivery of the same body is a duplicate. The body is not kept.
 */
export interface ParkedDelivery {
  id: string;
  key: string;
  kind: string;
  receivedAt: number;
  /** Attempts begun on it, the last one included. */
  attempts: number;
  reason: string;
  /** When it was parked (ms since the epoch). */
  at: number;
}

/** A planned action as the executor hands it over. */
export interface ActionInput {
  /** Idempotency key chosen by the caller: putting the same id twice keeps the first. */
  id: string;
  itemKey: string;
  rule: string;
  /** The planned call, opaque to the store. */
  call: unknown;
  /** First try; default: now. */
  nextTryAt?: number;
}

export interface OutboxAction {
  id: string;
  itemKey: string;
  rule: string;
  call: unknown;
  /** Failed tries so far. */
  attempts: number;
  nextTryAt: number;
  lastError?: string;
  createdAt: number;
  /** Set when the action is given up on; a parked action is never due. */
  parked?: { reason: string; at: number };
}

export type ActionFailure =
  | { error: string; retryable: true; nextTryAt: number }
  /** A failure that retrying cannot fix parks the action, with the error as the reason. */
  | { error: string; retryable: false };

/** A merge request the merge watch re-checks until its required statuses succeed. */
export interface WatchEntry {
  itemKey: string;
  project: string;
  mrId: number;
  /** The head the match was made on: a different head means re-evaluate, never merge. */
  headSha: string;
  /**
   * The target branch it was armed for. The server keeps merge-when-build-succeeds across a close,
   * a push while closed, a reopen and a change of target: the bot cancels it as soon as it sees the
   * merge request at another head or target (rules/item/disarm.ts). Absent in older records.
   */
  targetBranch?: string;
  /**
   * The server's own merge-when-build-succeeds was armed too (`on_server: true`): before the bot stops
   * watching it while the server still has it armed, it cancels the server's merge.
   */
  onServer?: boolean;
  rule: string;
  /** Status names that must succeed. */
  required: string[];
  since: number;
  /**
   * Armed on a comment: the watch's merge is checked again under it (the note read again, its
   * author's access read again, no push after it: docs/rules.md#members-commands).
   */
  trigger?: CommentTrigger;
}

/**
 * A merge request in a merge queue (docs/merge-queue.md): one queue per project, target branch and
 * name; ordered by `priority` (higher first), then `enqueuedAt`, then `itemKey`. The head of a queue
 * carries its progress: the head it pushed or found up to date (`pinnedSha`), the target head that
 * was merged in (`targetSha`), since when its statuses are awaited, and how many updates it took.
 */
export interface QueueEntry {
  itemKey: string;
  /** `namespace/project` of the target project. */
  project: string;
  projectId: number;
  mrId: number;
  iid: number;
  targetBranch: string;
  /** The queue's name (`default` unless the rule names one). */
  queue: string;
  rule: string;
  priority: number;
  enqueuedAt: number;
  /** Status names that must succeed on the pinned head. */
  required: string[];
  statusTimeoutMs: number;
  /** Updates of the source branch (target moved) before the merge request is taken out. */
  maxUpdates: number;
  /**
   * Merge train: how many times its failed car of one is built again before it is taken out, when
   * no car behind it (each contains it) tested it; absent: the default (rules/actions/queue.ts).
   */
  retries?: number;
  /** Merge train (docs/merge-queue.md#merge-trains): cars tested at once; absent: 1 (serial). */
  depth?: number;
  /**
   * `depth: auto` (docs/merge-queue.md#depth-auto-a-window-that-follows-the-ci): the bounds of the
   * window its rule asks for; `depth` is then absent.
   */
  depthAuto?: { min: number; max: number };
  /** Merge requests per car; absent: 1. */
  batch?: number;
  /** The train car it rides in (the same object on every member of the car), absent until built. */
  car?: TrainCar;
  /** Bisection: the largest car it may ride in after a failed batch was split; absent: `batch`. */
  carCap?: number;
  /**
   * Bisection: set on the second half of a failed car that was split (with `carCap`), the item keys of
   * the first half. It rides only once they are judged: built on top of a first half that passed, it
   * is the failed car's very tree again, so nothing rides on top of it until it is judged
   * (docs/merge-queue.md#merge-trains, Batches).
   */
  carAfter?: string[];
  /**
   * Merge train: the cars it rode in that a run gave up, latest first (at most `CARS_BEFORE_KEPT`): a
   * car built again alike (same branch, base, members, heads, position) takes that record's date and
   * identity, so it is the same commit (docs/merge-queue.md, "Same record, same commit").
   */
  carsBefore?: PastCar[];
  /** How long the train's cars took from their push to green, as last observed (estimates on the status page). */
  trainCiMs?: number;
  /**
   * The window of a `depth: auto` train as it last moved (+1 per car landed, halved after a failed
   * car), written on every entry of the queue; absent: the window's lower bound.
   */
  trainWindow?: number;
  removeSourceBranch?: boolean;
  mergeCommitMessage?: string;
  /** The tested head: pushed by the queue, or found up to date. Absent until the head is updated. */
  pinnedSha?: string;
  /** The target's head merged into `pinnedSha`. */
  targetSha?: string;
  /** When the statuses of `pinnedSha` started to be awaited. */
  testingSince?: number;
  updates: number;
  /**
   * Set when the queue took it out with a comment (a conflict, a failed or silent status...): the
   * entry stays as a memory, outside every queue, so the same head does not enter again at once and
   * loop; a new head (a push) or the rule matching anew (it stopped matching, then matched) lets it in.
   */
  left?: {
    at: number;
    sha: string;
    reason: string;
    /**
     * The note of the approval it was queued on (`approval.noteId`), if any: a NEW approval (a member's
     * comment with another id) lets it in again at the same head; the same one does not.
     */
    noteId?: number;
  };
  /**
   * Set when a member's comment approved the merge request's head for the queue
   * (docs/rules.md#members-commands): who (username), with which access level then, which note, and
   * the head the evaluation read. The merge train rides a fork's head only when it is this `sha`.
   */
  approval?: QueueApproval;
  /**
   * The comment (note trigger) of the evaluation that queued it, as the executor keeps triggers: the
   * queue's merge is checked again under it (the note read again, its author's access read again,
   * no push after it), so a member's command is replayed rather than an event it never saw.
   */
  trigger?: CommentTrigger;
  /**
   * Set while the queue's steps for it fail one after another (git failing, no credentials, the API
   * refusing): since when, how many steps, the last error, and when the merge request was told in a
   * comment. Shown by the status page and explain; cleared by the next step that does not fail.
   */
  trouble?: { since: number; count: number; error: string; told?: number };
  /**
   * Set when an operator moved it to the front of its queue (docs/merge-queue.md#steering-the-queue):
   * who and when. Fronted entries go before every other, the latest fronted first among them.
   */
  front?: { by: string; at: number };
}

/**
 * An operator's control of one queue (docs/merge-queue.md#steering-the-queue), kept apart from its
 * entries so that it holds for an empty queue too (a release freeze set before anything enters).
 * One per project, target branch and queue name; a control with nothing set is no control.
 */
export interface QueueControl {
  /** `namespace/project` of the target project. */
  project: string;
  projectId: number;
  targetBranch: string;
  queue: string;
  /** Set while the queue is paused: who paused it, why, and when. */
  paused?: { by: string; reason: string; at: number };
}

/** A member's approval of a head (`QueueEntry.approval`). */
export interface QueueApproval {
  by: string;
  level: number;
  noteId: number;
  sha: string;
  /**
   * When the bot recorded it (its clock): a merge train carries a fork's head only once the server
   * has had time to note a push made right after the comment (merge-train.ts).
   */
  at?: number;
}

/**
 * The comment (a note trigger, as the executor keeps triggers: the note's id and its events) of the
 * evaluation that queued a merge request or armed its merge (`QueueEntry.trigger`, `WatchEntry.trigger`).
 */
export interface CommentTrigger {
  kind: 'note';
  noteId: number;
  byBot: boolean;
  events?: { name: string; byBot: boolean }[];
}

/**
 * A car of a merge train: a commit merging its members' source heads, one after the other, into the
 * commit of the car ahead (car 1: into the target's head), pushed to a bot-owned branch. Recorded
 * before the push, with what makes its commit: the same record gives the same sha (fixed dates and
 * identity), so a replica rebuilding it after a crash never pushes different contents.
 */
/** How many given-up cars an entry remembers (`carsBefore`). */
export const CARS_BEFORE_KEPT = 4;

/** What makes a given-up car's commit: enough to build the very same one again. */
export type PastCar = Pick<
  TrainCar,
  'position' | 'base' | 'members' | 'heads' | 'branch' | 'date' | 'identity'
>;

export interface TrainCar {
  /** Unique per build: `<first member's iid>-<short base>`. */
  id: string;
  /** 1 at the front. */
  position: number;
  /** The commit it was built on: the target's head (car 1) or the car ahead's sha. */
  base: string;
  /** Item keys of its merge requests, in order. */
  members: string[];
  /** iids of the members, in order. */
  iids: number[];
  /** The source head merged for each member, in order. */
  heads: string[];
  /** The branch it is pushed to (`hookbot/train/<target>/<queue>/<iid>`). */
  branch: string;
  /** Commit date of its merges (seconds since the epoch) and identity: fixed before the push. */
  date: number;
  identity: { name: string; email: string };
  /** Its commit, once made. */
  sha?: string;
  /** When its push was done (its statuses are awaited since then). */
  pushedAt?: number;
  /** Set right before the target is pushed to it: after a crash, the target is read to tell. */
  landing?: number;
  /**
   * A car behind the front one: its statuses as the driver last read them while a car ahead was still
   * tested (`passed`: it waits for the cars ahead; `failed`: it is split or taken out when it is the
   * front). Absent: not read yet, its build is running. For the queue page (docs/merge-queue.md#where-it-shows).
   */
  checked?: { state: 'passed' | 'failed'; at: number; failed?: string[] };
  /**
   * How many times the car was built again after its build failed (a new commit: its `date` moved
   * on), with the names that failed the last time (docs/merge-queue.md#flaky-ci).
   */
  retried?: { count: number; failed: string[] };
}

export interface PausedRule {
  rule: string;
  reason: string;
  at: number;
}

/**
 * A decision as the store keeps it for explain. The store treats `decision` as opaque; whether it
 * acted is the caller's to say (`recordDecision`'s `acted`), and decides how long it is kept.
 */
export interface DecisionRecord {
  /**
   * Its id (12 hex digits), given by the store when it records it: what the status page and explain
   * name it by. Absent in decisions recorded before hookbot kept a history.
   */
  id?: string;
  itemKey: string;
  at: number;
  /** Present (true) when the decision acted; such decisions outlive the ring of recent evaluations. */
  acted?: true;
  decision: unknown;
}

export interface RecordDecisionOptions {
  /**
   * The decision acted: it sent, withdrew or parked an action, or took the item out of its merge
   * queue. It is then kept among the item's decisions that acted (`actingDecisions`), which later
   * evaluations that did nothing (the echoes of the bot's own changes) do not push out.
   */
  acted?: boolean;
  /** Keep this id instead of a new one (`hookbot state migrate` carries the ids over). */
  id?: string;
}

/** Counts and file sizes, for metrics and the status page. File figures are 0 without files. */
export interface StateStats {
  inbox: number;
  /** The inbox's size as stored (what `maxPendingBytes` bounds). */
  inboxBytes: number;
  dedupKeys: number;
  outbox: number;
  parked: number;
  watched: number;
  pausedRules: number;
  /** Queue controls held (paused queues). */
  queueControls: number;
  decisionItems: number;
  recentDecisions: number;
  documentBytes: number;
  journalBytes: number;
  journalRecords: number;
  /** Group commits written (one append and one fsync each) since open. */
  commits: number;
  /** fsync calls since open: one per commit, plus those of each compaction. */
  fsyncs: number;
  /** Compactions since open. */
  compactions: number;
}

export interface CloseOptions {
  /** Fold the journal into the document before closing, so the next start replays nothing. Default true. */
  compact?: boolean;
  /**
   * Wait at most this long for the writes in flight and the hand-back of what the replica held
   * (PostgreSQL: past it the connections are destroyed and the writes abandoned; accepted deliveries
   * stay in the database). The file store writes to a local disk and always finishes. Default: no
   * bound beyond the store's own timeouts.
   */
  timeoutMs?: number;
}

/** A replica of the fleet as the status page shows it. */
export interface ReplicaView {
  id: string;
  startedAt: number;
  /** Its latest heartbeat (each refresh). */
  seenAt: number;
  /** Set when it closed its store cleanly. */
  stoppedAt?: number;
  /** Deliveries it holds (accepted or taken over, not processed yet). */
  deliveries: number;
  /** Leases it holds: `sweep:<name>`, `item:<key>`. */
  leases: string[];
}

/**
 * What several replicas sharing one state need beyond the store (the PostgreSQL backend has it; the
 * file store, one process by construction, has none). Leases are PostgreSQL rows with an expiry in
 * the database's clock, renewed by the holder's refresh: a replica killed loses its leases after
 * `leaseMs`, and its work goes to another.
 */
export interface Fleet {
  /** This replica's name (hostname:pid unless configured). */
  readonly replicaId: string;
  /** Takes (or keeps) the named lease; false while another replica holds it. */
  tryLease(name: string): Promise<boolean>;
  releaseLease(name: string): Promise<void>;
  /**
   * Renews this replica's leases, takes over deliveries whose lease ran out, prunes the bounds and
   * reloads what the fleet shares (outbox, watches, schedules, paused rules, decisions). Runs by
   * itself every `refreshMs`; the scheduler calls it before a sweep.
   */
  refresh(): Promise<void>;
  /**
   * Reloads the merge queues alone (their entries and controls) from the database, after every write
   * this replica made before the call is durable: the driver of a merge train calls it once it holds
   * the train's lock, so it builds from the queue as the store holds it (every replica's entries, in
   * the one order), not from this replica's view. One round trip, where `refresh` makes a dozen.
   */
  reloadQueue(): Promise<void>;
  /** Called after a refresh took deliveries over (the pipeline resumes them). */
  onAdopted(listener: () => void): void;
  /**
   * Resolves when the database answers a round trip and none of this replica's statements has waited
   * past its bound (readiness): a replica whose accepts are stuck on a dead connection is not ready
   * even when a fresh connection would answer.
   */
  ping(): Promise<void>;
  /** Every replica seen, with what it holds now. */
  replicas(): Promise<ReplicaView[]>;
  /** Deliveries pending in the whole fleet (the inbox table), for the status page. */
  fleetInbox(): Promise<number>;
}

export interface StateStore {
  /** Present where several replicas share the state (PostgreSQL). */
  readonly fleet?: Fleet;

  // Lifecycle
  /** Loads the state (creating the folder and files when absent); refuses corrupt or newer files with a StateError. */
  open(): Promise<void>;
  /** Resolves once every write issued so far is durable. */
  flush(): Promise<void>;
  /** Folds the journal into the document now (also runs by itself past the configured thresholds). */
  compact(): Promise<void>;
  close(options?: CloseOptions): Promise<void>;
  stats(): StateStats;

  // Inbox
  /**
   * Durable before it resolves. Rejects with StateError `inbox_full` at the pending bounds (entries,
   * `maxPending`, or bytes, `maxPendingBytes`).
   */
  accept(delivery: Delivery): Promise<AcceptResult>;
  /** Accepted, not processed, in acceptance order, each parsed in full (for tools and tests). */
  pending(): InboxEntry[];
  /**
   * The same, each body read only when asked: what to resume after a restart, whatever the size of
   * the backlog.
   */
  pendingDeliveries(): PendingDelivery[];
  /**
   * A pending delivery by id, its body read when asked. `fresh`: the body already parsed (by the
   * receiver), handed to the first reader instead of parsing the stored text again.
   */
  delivery(id: string, kind: string, fresh?: unknown): PendingDelivery;
  /** Durable before it resolves; the de-dup key stays until it expires. Unknown or processed ids are a no-op. */
  markProcessed(id: string): Promise<void>;
  /**
   * Counts, durably before it resolves, that a process begins processing a pending delivery; the
   * attempts begun on it so far, this one included (by any process, or replica). 0 for an unknown or
   * processed id. An attempt that never finished is a process that died during it: the pipeline
   * parks a delivery past its bound instead of dying on it again.
   */
  beginAttempt(id: string): Promise<number>;
  /** The attempts begun on a pending delivery so far (0 for none, or an unknown id). */
  deliveryAttempts(id: string): number;
  /** Gives back an attempt that ended without a crash (a clean stop took it away unfinished). */
  releaseAttempt(id: string): Promise<void>;
  /**
   * Takes a pending delivery out of the inbox unprocessed, with the reason (kept, at most `maxParked`,
   * oldest parked dropped first); its de-dup key stays. Unknown or processed ids are a no-op.
   */
  parkDelivery(id: string, reason: string): Promise<void>;
  /** Deliveries parked, oldest parked first. */
  parkedDeliveries(): ParkedDelivery[];

  // Outbox
  /** Resolves `created: false` (and changes nothing) when an action with this id is already held. */
  putAction(action: ActionInput): Promise<{ created: boolean }>;
  getAction(id: string): OutboxAction | undefined;
  /** Unparked actions with `nextTryAt <= now`, earliest first. */
  dueActions(now: number): OutboxAction[];
  /** Removes the action (done, or given up by an operator). Unknown ids are a no-op. */
  completeAction(id: string): Promise<void>;
  /** Counts a failed try; rejects with StateError `unknown_action` for an id the outbox does not hold. */
  failAction(id: string, failure: ActionFailure): Promise<void>;
  /** Parks the action with a visible reason; rejects with StateError `unknown_action` for an unknown id. */
  parkAction(id: string, reason: string): Promise<void>;
  /** Parked actions, oldest parked first. */
  listParked(): OutboxAction[];

  // Merge watch
  /** Adds or replaces the watch for `itemKey`. */
  watch(entry: WatchEntry): Promise<void>;
  unwatch(itemKey: string): Promise<void>;
  watched(): WatchEntry[];

  // Merge queues
  /** Adds or replaces the queue entry of `entry.itemKey` (a merge request is in one queue at most). */
  enqueue(entry: QueueEntry): Promise<void>;
  dequeue(itemKey: string): Promise<void>;
  /** Every queue entry, in no particular order (`queueOrder` sorts a queue). */
  queued(): QueueEntry[];
  /**
   * Adds or replaces the control of `control`'s queue (keyed by project, case-insensitive, target
   * branch and queue name); a control with nothing set (no `paused`) removes it.
   */
  setQueueControl(control: QueueControl): Promise<void>;
  /** Every queue control, in no particular order. */
  queueControls(): QueueControl[];

  // Schedules and approvals
  /** The next run of a sweep, per project or (project undefined) for the whole sweep. */
  nextRun(sweep: string, project?: string): number | undefined;
  setNextRun(sweep: string, project: string | undefined, at: number): Promise<void>;
  lastSuccess(sweep: string): number | undefined;
  setLastSuccess(sweep: string, at: number): Promise<void>;
  /** Pauses a rule (circuit breaker); it stays paused across restarts until approved. */
  pauseRule(rule: string, reason: string): Promise<void>;
  approveRule(rule: string): Promise<void>;
  pausedRules(): PausedRule[];

  // Decisions (explain)
  /**
   * Records an evaluation of an item: its latest decision from now on, the newest of the ring of
   * recent decisions, and the newest of the item's kept decisions (`keptDecisions`).
   */
  recordDecision(itemKey: string, decision: unknown, options?: RecordDecisionOptions): Promise<void>;
  latestDecision(itemKey: string): DecisionRecord | undefined;
  /** The most recent decisions, newest first, at most `limit` (and at most the ring's size). */
  recentDecisions(limit?: number): DecisionRecord[];
  /** The latest decision of every item kept (at most `decisionItems`), least recently recorded first. */
  latestDecisions(): DecisionRecord[];
  /**
   * The decisions kept for explain of one item, newest first: its last `decisionHistory`
   * evaluations, and besides them its last `actingDecisions` decisions that acted, within
   * `decisionItemBytes` (the newest and the newest that acted are kept whatever their size) and
   * `decisionBytes` for all items together (past it the least recently decided items' go first).
   * Empty for an item without any. Asynchronous: PostgreSQL reads them from the database when asked
   * (they are not part of a replica's view).
   */
  keptDecisions(itemKey: string): Promise<DecisionRecord[]>;
}
