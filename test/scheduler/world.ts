/**
 * A project in the sandbox, served by a bot user, with the bot's parts wired as in production:
 * API client over HTTP, a state store, rules loaded from a folder, the executor and the sweeps.
 * Each test makes its own world (its own group and project) inside one sandbox per file.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type Client } from '../../src/api/client.ts';
import { createExecutor, type Executor } from '../../src/rules/executor/executor.ts';
import { createFreshCheck } from '../../src/rules/item/fresh-check.ts';
import { createSnapshotReader } from '../../src/rules/item/read-snapshot.ts';
import { loadRules, type LoadedRules } from '../../src/rules/grammar/load.ts';
import { formatProblem } from '../../src/rules/grammar/problem.ts';
import { createSweepSet, type SweepSet, type SweepSettings } from '../../src/scheduler/sweep-set.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import type { ProjectRec, UserRec } from '../../src/sandbox/db.ts';
import type { Sandbox } from '../../src/sandbox/server.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import type { StateStore } from '../../src/state/store.ts';

export const DAY = 86_400_000;

export const STALE_COMMENT = 'Closing after 60 days without activity.';

/** The stale-issue rule of the rule language's example, word for word. */
export const STALE_RULE = `
rules:
  - name: close stale issues
    schedule: daily
    for: issues
    if: [ { state: opened }, { updated: { older_than: 60d } }, { labels: { none: [pinned] } } ]
    do: [ { comment: "${STALE_COMMENT}" }, close ]
`;

export interface WorldOptions {
  /** Unique per test: names the group, project and users. */
  prefix: string;
  /** The rules of default.yml. */
  rules: string;
  store?: StateStore;
  dryRun?: boolean;
  settings?: Partial<SweepSettings>;
  /** Give the project a git repository with a README (for merge requests with real branches). */
  repository?: boolean;
  /** The client's base URL (a proxy in front of the sandbox). */
  baseUrl?: string;
  now?: () => number;
  /** In [0, 1): the executor's backoff jitter. */
  random?: () => number;
  /**
   * The executor's fresh check before merges, over a reader that knows the merge watch (as the
   * running bot wires them): off by default here, where tests judge the sweeps' own steps.
   */
  freshCheck?: boolean;
}

export interface World {
  sb: Sandbox;
  project: ProjectRec;
  /** `namespace/project`. */
  path: string;
  bot: UserRec;
  /** The bot's client (what the sweeps use). */
  client: Client;
  /** The administrator's client (what the test uses to arrange things). */
  admin: Client;
  store: StateStore;
  rules: LoadedRules;
  rulesDir: string;
  executor: Executor;
  sweeps: SweepSet;
  settings: SweepSettings;
}

export async function loadRulesFrom(dir: string, text: string): Promise<LoadedRules> {
  await writeFile(join(dir, 'default.yml'), text);
  const rules = await loadRules(dir);
  if (rules.problems.length > 0) throw new Error(rules.problems.map(formatProblem).join('\n'));
  return rules;
}

/** The parts over an existing world's store and client: a restarted bot, or a dry-run one. */
export function wire(
  world: Pick<World, 'client' | 'rules'> & { store: StateStore; settings: SweepSettings },
  options: { dryRun?: boolean; now?: () => number; random?: () => number; freshCheck?: boolean } = {},
): { executor: Executor; sweeps: SweepSet } {
  const now = options.now ?? Date.now;
  const projectRules = { forProject: (p: string) => world.rules.byProject(p) };
  const reader = createSnapshotReader(world.client, {
    now,
    watching: (itemKey) => world.store.watched().some((entry) => entry.itemKey === itemKey),
  });
  const executor = createExecutor({
    client: world.client,
    store: world.store,
    ...(options.freshCheck ? { freshCheck: createFreshCheck({ reader, rules: projectRules, now }) } : {}),
    dryRun: options.dryRun ?? false,
    now,
    random: options.random ?? (() => 0.5),
    retry: { baseDelayMs: 1_000, maxDelayMs: 60_000 },
  });
  const sweeps = createSweepSet(
    {
      client: world.client,
      store: world.store,
      rules: projectRules,
      executor,
      now,
      ...(options.freshCheck ? { reader } : {}),
    },
    world.settings,
  );
  return { executor, sweeps };
}

export async function makeWorld(sb: Sandbox, options: WorldOptions): Promise<World> {
  const db = sb.ctx.db;
  const bot = addUser(db, {
    username: `${options.prefix}-bot`,
    private_token: `${options.prefix}-bot-token-0123456789`,
  });
  const group = addGroup(db, {
    name: options.prefix,
    owner_id: 1,
    members: [{ user_id: bot.id, access_level: 40 }],
  });
  const project = await addProject(sb.ctx, {
    name: 'web',
    namespace_id: group.id,
    creator_id: 1,
    ...(options.repository ? { initialFiles: { 'README.md': '# web\n' } } : {}),
  });
  const path = `${group.path}/${project.path}`;
  const baseUrl = options.baseUrl ?? sb.url;
  // No client retries: the tests decide what a failure does.
  const client = createClient({ baseUrl, token: bot.private_token, retry: { limit: 0 } });
  const admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
  const store = options.store ?? createMemoryStore();
  await store.open();
  const rulesDir = await mkdtemp(join(tmpdir(), 'hookbot-sweep-rules-'));
  await mkdir(rulesDir, { recursive: true });
  const rules = await loadRulesFrom(rulesDir, options.rules);
  const settings: SweepSettings = {
    projects: [path],
    budget: 30,
    breaker: { maxItems: 50, maxShare: 0.5 },
    reconcileLookbackMs: 15 * 60_000,
    hooks: { url: undefined, manage: false, token: undefined },
    ...options.settings,
  };
  const { executor, sweeps } = wire(
    { client, rules, store, settings },
    {
      ...(options.dryRun !== undefined ? { dryRun: options.dryRun } : {}),
      ...(options.now ? { now: options.now } : {}),
      ...(options.random ? { random: options.random } : {}),
      ...(options.freshCheck ? { freshCheck: true } : {}),
    },
  );
  return { sb, project, path, bot, client, admin, store, rules, rulesDir, executor, sweeps, settings };
}

/** Creates an issue (as the administrator) last updated `ageDays` ago. */
export async function issueAged(world: World, title: string, ageDays: number, labels: string[] = []) {
  const at = new Date(Date.now() - ageDays * DAY).toISOString();
  const issue = await world.admin.issues.create(world.project.id, { title, labels, created_at: at });
  return world.admin.issues.update(world.project.id, issue.id, { updated_at: at });
}

export async function notesOf(world: World, issueId: number): Promise<string[]> {
  const bodies: string[] = [];
  for await (const note of world.admin.notes.listIssueNotes(world.project.id, issueId))
    bodies.push(note.body);
  return bodies;
}

export async function issueStates(world: World): Promise<Map<string, string>> {
  const states = new Map<string, string>();
  for await (const issue of world.admin.issues.list(world.project.id)) states.set(issue.title, issue.state);
  return states;
}
