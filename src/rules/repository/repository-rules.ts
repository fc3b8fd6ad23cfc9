/**
 * Rules in the repository: each project's `.hookbot.yml`, at the root of its default branch, read
 * through the files API and layered after the operator's central rules (docs/repository-rules.md).
 *
 * - Freshness: a project's file is read the first time one of its items is evaluated, again when a
 *   push to the default branch adds, modifies or removes it (the push payload lists each commit's
 *   files), when an item is evaluated more than a minute after the last read (replicas of a fleet
 *   never see each other's pushes), and by the reconcile sweep. What was read is kept by the file's blob id: the
 *   same blob is never checked twice. A file that disappears leaves the central rules alone.
 * - A broken file never half-applies: the last good repository rules stay in force, and the
 *   commit that changed the file gets the commit status `hookbot/config` (`failed`, the first
 *   problem as `line:column: message`; `success` when it is taken). The status page lists it.
 * - A merge request that changes the file gets the same status on its head and one comment of the
 *   bot, edited in place on each new push, with every problem and the plan (plan.ts): what the
 *   proposed rules would do on the project's open items next to the rules in force, computed for
 *   the merge request's author (and whoever may push to its fork): only what they may read
 *   (plan-access.ts). Only pushes and merge request events start a review, whatever else arrived in
 *   the same burst: the bot's own comment and status fire hooks too, and start nothing. Its comment
 *   is found among the notes whose author (as the server says) is the bot. Plans per author and per
 *   merge request in an hour are bounded (plan-limit.ts): past that, the comment says when.
 *
 * Beside this file: read-file.ts (the file through the files API, and whether a merge request
 * changes it) and review-text.ts (a problem as the status shows it, the merge request's comment).
 */
import { ApiError, fileText } from '../../api/index.ts';
import { ruleSet, type CompiledRule, type CompiledRuleSet } from '../engine/compile.ts';
import { triggerEvents } from '../engine/event-names.ts';
import { isBotUser, type BotIdentity, type Trigger } from '../engine/snapshot.ts';
import { MAX_RULE_FILE_BYTES, tooLarge } from '../grammar/parse-file.ts';
import { firstProblems, problemCount, type Problem } from '../grammar/problem.ts';
import type { ProjectRules } from '../item/process-item.ts';
import type { ItemAddress } from '../item/read-snapshot.ts';
import type { RepositoryPolicy } from './allow-list.ts';
import type { QueueEntry } from '../../state/index.ts';
import { planChange, type PlanBudget, type PlanClient, type PlanReport } from './plan.ts';
import { parseRuleFileOffThread } from '../grammar/parse-off-thread.ts';
import { createPlanLimiter, DEFAULT_PLAN_LIMITS, type PlanLimits } from './plan-limit.ts';
import { checkParsedRepositoryFile, REPOSITORY_FILE } from './repository-file.ts';
import { keptBeside } from './queues.ts';
import { readFile, readStamp, touchesRepositoryFile, type RepositoryClient } from './read-file.ts';
import { clock, commentBody, PLAN_MARKER, problemText, waitText, type Waiting } from './review-text.ts';

/** The commit status the bot posts about a project's `.hookbot.yml`. */
export const CONFIG_STATUS = 'hookbot/config';

interface RepositoryLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What the status page shows of one project's file. */
export interface RepositoryRulesState {
  project: string;
  /** The blob of the file read last; undefined: no file. */
  blobId?: string;
  /** The rules in force from the file (the last good ones). */
  rules: number;
  /** When the rules in force were taken (ms since the epoch). */
  loadedAt?: number;
  /** Problems of the file read last (formatted); empty when it was taken. */
  problems: string[];
  /** The commit that brought the refused file. */
  problemCommit?: string;
  /** When the file was last looked for (ms). */
  checkedAt: number;
}

interface Entry {
  project: string;
  blobId?: string;
  /** The central rules the blob was checked against (their names are taken): a reload checks it again. */
  checkedAgainst?: CompiledRuleSet;
  good?: { rules: readonly CompiledRule[]; loadedAt: number };
  problems: Problem[];
  problemCommit?: string;
  checkedAt: number;
}

export interface RepositoryRules extends ProjectRules {
  /** The client and the bot's identity, once the bot has them (before: central rules only). */
  attach(parts: { client: RepositoryClient; bot: BotIdentity; planClient: () => PlanClient }): void;
  /** Reads the project's file unless it was read in the last minute (`maxAgeMs`). */
  prepare(pathWithNamespace: string): Promise<void>;
  /** Reads the project's file again (the reconcile sweep, a push that changed it). */
  refresh(project: string | number): Promise<void>;
  /** A delivery: a push to a default branch that touched the file refreshes the project. */
  onEvent(event: DeliveredEvent): Promise<void>;
  /** Whether the project's file was read since the start (before, its rules are not known). */
  known(pathWithNamespace: string): boolean;
  /** Called after a project's repository rules in force changed (taken, or the file gone). */
  onChange(listener: (project: string) => void): void;
  /**
   * After an item run: a merge request that changes the file gets its status and comment. One review
   * of a merge request at a time (a plan that waited for its limit runs from a timer).
   */
  reviewMergeRequest(item: ItemAddress, triggers: readonly Trigger[]): Promise<void>;
  /** Cancels the plans waiting for their limit (the runtime stops). */
  close(): void;
  state(): RepositoryRulesState[];
}

/** A parsed delivery (events/schemas.ts `HookEvent`, which rules/ does not import): only pushes are read. */
export interface DeliveredEvent {
  kind: string;
  payload: object;
}

interface PushPayload {
  ref: string;
  project_id: number;
  project?: { default_branch?: unknown };
  commits?: Record<string, unknown>[];
}

export interface RepositoryRulesOptions {
  central: ProjectRules;
  /**
   * How old a read may be before an item of the project reads the file again (default 60 s): the
   * other replicas of a fleet never see the push that changed it.
   */
  maxAgeMs?: number;
  /** Post `hookbot/config` statuses (default true; false for a dry run, which writes nothing). */
  postStatuses?: boolean;
  policy: RepositoryPolicy;
  budget?: Partial<PlanBudget>;
  /** How many plans per author and per merge request in an hour (plan-limit.ts). */
  planLimits?: Partial<PlanLimits>;
  log?: RepositoryLog;
  now?: () => number;
  /**
   * Runs work as the item's one run (rules/executor/lock.ts `ItemRuns`, shared with the pipeline and
   * the sweeps): a plan that waited for its limit is computed by a timer, outside any hook's run, and
   * must not review a merge request beside its own item run (here or on another replica), or two
   * reviews could each find no comment and post one. Default: run at once.
   */
  runItem?: (item: ItemAddress, work: () => Promise<void>) => Promise<void>;
  /** The bot's merge-queue entries, for the plan (plan.ts `queued`): none when absent. */
  queued?: () => readonly QueueEntry[];
}

/**
 * Whether a run's triggers start a review: a change of the merge request (`merge_request.*`, a push
 * to its source branch) that the bot did not cause, or a manual run. The bot's own comment and
 * status fire hooks too, and start nothing. Every event of a burst counts, not only the latest: a
 * burst folds into one trigger named after its last event (the pipeline's coalesce), and an open
 * followed within the debounce by a CI's `pending` is named `status.changed`, yet holds the open.
 */
export function startsReview(triggers: readonly Trigger[]): boolean {
  return triggers.some((trigger) =>
    triggerEvents(trigger).some(
      (event) =>
        !event.byBot &&
        (event.name.startsWith('merge_request.') || event.name === 'push' || event.name === 'manual'),
    ),
  );
}

const quiet: RepositoryLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** Most merge requests whose plan waits with a timer; past it, the next push computes the plan. */
const MAX_WAITING = 1000;

/** Problems of a file shown at most (in the comment, on the status page, in the log); the rest counted. */
const MAX_PROBLEMS_SHOWN = 50;

/** Statuses take a short description. */
const short = (text: string): string => (text.length > 250 ? `${text.slice(0, 249)}…` : text);

export function createRepositoryRules(options: RepositoryRulesOptions): RepositoryRules {
  const { central, policy } = options;
  const log = options.log ?? quiet;
  const now = options.now ?? Date.now;
  let parts: { client: RepositoryClient; bot: BotIdentity; planClient: () => PlanClient } | undefined;
  const entries = new Map<string, Entry>();
  const reading = new Map<string, Promise<void>>();
  const listeners: ((project: string) => void)[] = [];
  const changed = (project: string) => {
    for (const listener of listeners) listener(project);
  };
  /** Merge requests reviewed, by `project:id`: the head and blob their comment shows. */
  const reviewed = new Map<string, string>();
  const limits = { ...DEFAULT_PLAN_LIMITS, ...options.planLimits };
  const limiter = createPlanLimiter(limits);
  /** Merge requests whose plan waits for its limit, by `project:id`: the timer that reviews them then. */
  const waiting = new Map<string, { timer: NodeJS.Timeout; until: number }>();
  /** The review running for each merge request, by `project:id`: the next one waits for it. */
  const reviewing = new Map<string, Promise<void>>();
  let closed = false;
  /**
   * Whether a merge request changes the file, by `project:id:head:target`: its `/changes` (up to
   * 4 MB) are read once per head, not at every event of the merge request (labels, edits).
   */
  const touching = new Map<string, boolean>();
  async function touches(
    item: ItemAddress,
    mr: { sha: string; target_branch: string; source_project_id?: number | null },
  ) {
    const key = `${item.projectId}:${item.id}:${mr.sha}:${mr.target_branch}`;
    const known = touching.get(key);
    if (known !== undefined) return known;
    const found = await touchesRepositoryFile(parts!.client, item, mr);
    touching.set(key, found);
    if (touching.size > 1000) touching.delete(touching.keys().next().value!);
    return found;
  }
  /** Combined sets, by central set: rebuilt when either side changes. */
  const combined = new WeakMap<CompiledRuleSet, { good: Entry['good']; set: CompiledRuleSet }>();

  let warnedFallback = false;
  async function check(text: string, size: number, project: string) {
    // Explain names a repository rule's place as `acme/web:.hookbot.yml:3:5`.
    const file = `${project}:${REPOSITORY_FILE}`;
    if (size > MAX_RULE_FILE_BYTES) return { rules: undefined, problems: [tooLarge(file, size)] };
    // Parsed away from the event loop that answers hooks, then checked (compiled) here.
    const parsed = await parseRuleFileOffThread(text, file, (error) => {
      if (!warnedFallback)
        log.warn({ err: error }, `no worker thread for ${REPOSITORY_FILE}: parsing on the main thread`);
      warnedFallback = true;
    });
    const checked = checkParsedRepositoryFile(parsed, text, {
      file,
      policy,
      project,
      central: central.forProject(project).rules,
    });
    // What the status page, the log and the merge request's comment show: the first ones only.
    return { rules: checked.rules, problems: firstProblems(checked.problems, MAX_PROBLEMS_SHOWN) };
  }

  /**
   * Posts the config status unless the commit already has this very one. A status that cannot be
   * posted is logged: it reports the rules, it does not decide them.
   */
  async function postStatus(
    project: number,
    sha: string,
    state: 'success' | 'failed',
    description: string,
  ): Promise<void> {
    const client = parts!.client;
    if (options.postStatuses === false) return;
    try {
      for await (const status of client.statuses.list(project, sha))
        if (
          status.name === CONFIG_STATUS &&
          status.status === state &&
          status.description === short(description)
        )
          return;
      await client.statuses.create(project, sha, {
        state,
        name: CONFIG_STATUS,
        description: short(description),
      });
    } catch (error) {
      log.warn({ project, sha, err: error }, `cannot post ${CONFIG_STATUS}`);
    }
  }

  async function readNow(ref: string | number): Promise<void> {
    const client = parts!.client;
    const project = await client.projects.get(ref);
    const branch = project.default_branch;
    // The branch by its full name: a tag named like it would be read instead of a bare name.
    const read = branch ? await readFile(client, project.id, `refs/heads/${branch}`) : undefined;
    // Recorded only once read: a read that failed is tried again by the next item.
    const key = project.path_with_namespace.toLowerCase();
    const entry: Entry = entries.get(key) ?? {
      project: project.path_with_namespace,
      problems: [],
      checkedAt: 0,
    };
    entry.checkedAt = now();
    entries.set(key, entry);
    if (!read || !branch) {
      if (entry.blobId !== undefined || entry.good)
        log.info({ project: entry.project }, `${REPOSITORY_FILE} is gone: the central rules only`);
      const had = entry.good !== undefined;
      entry.blobId = undefined;
      entry.good = undefined;
      entry.problems = [];
      delete entry.problemCommit;
      if (had) changed(entry.project);
      return;
    }
    const againstNow = central.forProject(project.path_with_namespace);
    // A file too large to read has no blob or commit the bot knows: the branch's head stands for both.
    const seen =
      'file' in read
        ? { blobId: read.file.blob_id, commit: read.file.last_commit_id ?? read.file.commit_id }
        : await client.branches
            .get(project.id, branch)
            .then((found) => ({ blobId: `too-large@${found.commit.id}`, commit: found.commit.id }));
    if (seen.blobId === entry.blobId && entry.checkedAgainst === againstNow) return;
    entry.blobId = seen.blobId;
    entry.checkedAgainst = againstNow;
    const commit = seen.commit;
    const checked =
      'file' in read
        ? await check(fileText(read.file), read.file.size, project.path_with_namespace)
        : { rules: undefined, problems: [tooLarge(`${project.path_with_namespace}:${REPOSITORY_FILE}`)] };
    if (checked.rules === undefined) {
      entry.problems = checked.problems;
      entry.problemCommit = commit;
      log.error(
        { project: entry.project, commit, problems: checked.problems.map(problemText) },
        `${REPOSITORY_FILE} refused: ${entry.good ? 'the last good repository rules stay in force' : 'the central rules only'}`,
      );
      await postStatus(project.id, commit, 'failed', problemText(checked.problems[0]!));
      return;
    }
    const had = entry.good !== undefined;
    entry.good = { rules: checked.rules, loadedAt: now() };
    entry.problems = [];
    delete entry.problemCommit;
    if (had) changed(entry.project);
    log.info({ project: entry.project, commit, rules: checked.rules.length }, `${REPOSITORY_FILE} loaded`);
    await postStatus(
      project.id,
      commit,
      'success',
      `${checked.rules.length} rule${checked.rules.length === 1 ? '' : 's'} in force`,
    );
  }

  /**
   * One read per project at a time. A server that is away (a retryable error) is thrown, so the
   * delivery or the item is tried again; any other failure (the bot may not read the file, a
   * status refused) is logged and leaves the rules as they were: the repository's file never stands
   * between a project and its central rules.
   */
  function read(ref: string | number): Promise<void> {
    const key = String(ref).toLowerCase();
    const running = reading.get(key);
    if (running) return running;
    const next = readNow(ref)
      .catch((error: unknown) => {
        if (error instanceof ApiError && error.retryable) throw error;
        log.warn({ project: ref, err: error }, `cannot read ${REPOSITORY_FILE}: the rules stay as they were`);
        const known = typeof ref === 'string' ? entries.get(key) : undefined;
        if (typeof ref === 'string' && !known)
          entries.set(key, { project: ref, problems: [], checkedAt: now() });
      })
      .finally(() => reading.delete(key));
    reading.set(key, next);
    return next;
  }

  function forProject(pathWithNamespace: string): CompiledRuleSet {
    const base = central.forProject(pathWithNamespace);
    const good = entries.get(pathWithNamespace.toLowerCase())?.good;
    if (!good) return base;
    const cached = combined.get(base);
    if (cached && cached.good === good) return cached.set;
    // Checked against the central rules of its time: a name they took since, or a queue, is theirs.
    const set = ruleSet([...base.rules, ...good.rules.filter(keptBeside(base.rules))]);
    combined.set(base, { good, set });
    return set;
  }

  async function reviewMergeRequest(item: ItemAddress, triggers: readonly Trigger[]): Promise<void> {
    if (!parts || item.type !== 'merge_request') return;
    if (!startsReview(triggers)) return;
    const { client, bot } = parts;
    const mr = await client.mergeRequests.get(item.projectId, item.id);
    if (mr.state !== 'opened' || !mr.sha) return;
    const key = `${item.projectId}:${item.id}`;
    if (!(await touches(item, { ...mr, sha: mr.sha }))) return;
    const sourceProject = mr.source_project_id ?? item.projectId;
    const read = await readFile(client, sourceProject, mr.sha);
    const file = read && 'file' in read ? read.file : undefined;
    const stamp = `${mr.sha}:${readStamp(read)}`;
    if (reviewed.get(key) === stamp) return;
    const project = await client.projects.get(item.projectId);
    const path = project.path_with_namespace;
    const checked = file
      ? await check(fileText(file), file.size, path)
      : read
        ? { rules: undefined, problems: [tooLarge(`${path}:${REPOSITORY_FILE}`)] }
        : { rules: [] as CompiledRule[], problems: [] as Problem[] };
    let plan: PlanReport | undefined;
    let wait: Waiting | undefined;
    if (checked.rules !== undefined) {
      const limited = limiter.take(String(mr.author.id), key, now());
      if (limited) {
        wait = {
          ...limited,
          author: mr.author.username,
          scheduled: planLater(item, key, limited.until),
        };
        log.info(
          { project: path, mergeRequest: mr.iid, author: mr.author.username, until: clock(limited.until) },
          `plan of ${REPOSITORY_FILE} not computed: ${waitText(wait)}`,
        );
      }
    }
    if (checked.rules !== undefined && !wait) {
      plan = await planChange({
        client: parts.planClient(),
        project: path,
        // Shown on the merge request: only what its author (and whoever may push to it) may read.
        for: { mergeRequest: mr },
        current: forProject(path),
        proposed: ruleSet([...central.forProject(path).rules, ...checked.rules]),
        ...(options.budget ? { budget: options.budget } : {}),
        ...(options.queued ? { queued: options.queued() } : {}),
        bot,
      });
    }
    if (checked.rules !== undefined) {
      const said = file
        ? `${checked.rules.length} rule${checked.rules.length === 1 ? '' : 's'}, no problems`
        : `${REPOSITORY_FILE} removed: the central rules only`;
      await postStatus(
        sourceProject,
        mr.sha,
        'success',
        wait ? `${said}; the plan waits until ${clock(wait.until)} (${waitText(wait)})` : said,
      );
    } else await postStatus(sourceProject, mr.sha, 'failed', problemText(checked.problems[0]!));

    const body = commentBody(
      mr.sha,
      checked.problems,
      plan,
      { target: mr.target_branch, default: project.default_branch },
      wait,
    );
    let mine: { id: number; body: string } | undefined;
    for await (const note of client.notes.listMergeRequestNotes(item.projectId, item.id))
      if (!note.system && isBotUser(bot, note.author) && note.body.includes(PLAN_MARKER)) {
        mine = note;
        break;
      }
    if (!mine) await client.notes.createMergeRequestNote(item.projectId, item.id, body);
    else if (mine.body !== body)
      await client.notes.updateMergeRequestNote(item.projectId, item.id, mine.id, body);
    reviewed.delete(key);
    // A plan that waits is not done: the same head is reviewed again when it is due.
    reviewed.set(key, wait ? `${stamp}:waiting` : stamp);
    // Only a memory of recent reviews (a restart reviews again, and finds the same comment).
    if (reviewed.size > 1000) reviewed.delete(reviewed.keys().next().value!);
    log.info(
      { project: path, mergeRequest: mr.iid, head: mr.sha, problems: problemCount(checked.problems) },
      `${REPOSITORY_FILE} of a merge request reviewed`,
    );
  }

  /** Reviews a merge request after the one running for it, if any (pipeline runs and timers alike). */
  function review(item: ItemAddress, triggers: readonly Trigger[]): Promise<void> {
    const key = `${item.projectId}:${item.id}`;
    const before = reviewing.get(key) ?? Promise.resolve();
    const next = before.then(() => reviewMergeRequest(item, triggers));
    const settled = next.catch(() => undefined);
    reviewing.set(key, settled);
    void settled.then(() => {
      if (reviewing.get(key) === settled) reviewing.delete(key);
    });
    return next;
  }

  /**
   * Reviews the merge request again once its plan may be computed (one timer per merge request, at
   * most MAX_WAITING). False when no timer could be set: the next push computes it.
   */
  function planLater(item: ItemAddress, key: string, until: number): boolean {
    const known = waiting.get(key);
    if (closed) return false;
    if (known && known.until <= until) return true;
    if (!known && waiting.size >= MAX_WAITING) return false;
    if (known) clearTimeout(known.timer);
    const timer = setTimeout(
      () => {
        waiting.delete(key);
        const run = options.runItem ?? ((_item: ItemAddress, work: () => Promise<void>) => work());
        run(item, () => review(item, [{ kind: 'manual', byBot: false }])).catch((error: unknown) =>
          log.warn({ item: key, err: error }, 'could not compute the plan that waited for its limit'),
        );
      },
      Math.max(0, until - now()),
    );
    timer.unref();
    waiting.set(key, { timer, until });
    return true;
  }

  return {
    forProject,
    close() {
      closed = true;
      for (const { timer } of waiting.values()) clearTimeout(timer);
      waiting.clear();
    },
    attach(given) {
      parts = given;
    },
    async prepare(pathWithNamespace) {
      if (!parts) return;
      const entry = entries.get(pathWithNamespace.toLowerCase());
      if (entry && now() - entry.checkedAt < (options.maxAgeMs ?? 60_000)) return;
      await read(pathWithNamespace);
    },
    async refresh(project) {
      if (!parts) return;
      await read(project);
    },
    async onEvent(event) {
      if (!parts || event.kind !== 'push') return;
      const push = event.payload as PushPayload;
      const touched = (push.commits ?? []).some((commit) =>
        (['added', 'modified', 'removed'] as const).some((list) => {
          const files: unknown = commit[list];
          return Array.isArray(files) && files.includes(REPOSITORY_FILE);
        }),
      );
      if (!touched || !push.ref.startsWith('refs/heads/')) return;
      const branch = push.ref.slice('refs/heads/'.length);
      const defaultBranch = push.project?.default_branch;
      // Payloads without the project's default branch: the read finds out (it reads the default branch).
      if (typeof defaultBranch === 'string' && defaultBranch !== branch) return;
      await read(push.project_id);
    },
    reviewMergeRequest: review,
    known: (pathWithNamespace) => entries.has(pathWithNamespace.toLowerCase()),
    onChange(listener) {
      listeners.push(listener);
    },
    state() {
      return [...entries.values()]
        .filter((entry) => entry.blobId !== undefined || entry.good)
        .map((entry) => ({
          project: entry.project,
          ...(entry.blobId !== undefined ? { blobId: entry.blobId } : {}),
          rules: entry.good?.rules.length ?? 0,
          ...(entry.good ? { loadedAt: entry.good.loadedAt } : {}),
          problems: entry.problems.map(problemText),
          ...(entry.problemCommit ? { problemCommit: entry.problemCommit } : {}),
          checkedAt: entry.checkedAt,
        }));
    },
  };
}
