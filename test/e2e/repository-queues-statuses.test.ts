/**
 * What a project's `.hookbot.yml` may not do with the operator's merges (docs/repository-rules.md),
 * over real HTTP: the sandbox delivers its hooks to the bot (`startRuntime`, as `hookbot serve` runs
 * it), with `rules.status_authors` naming the CI's account and `rules.repository.allow: [queue]`.
 *
 * - Statuses: a repository rule that posts `ci/test: success` satisfies neither the operator's
 *   `merge` rule nor the merge queue (the bot marks it `[.hookbot.yml]`, and a marked status of the
 *   bot's never counts); the CI's own `ci/test` does.
 * - Queues: a repository rule's queue over `rules.repository.queue.max_depth` (1 by default), or
 *   naming the queue the central rules feed, is refused like any invalid file: `hookbot/config`
 *   failed on the commit with the problem, and the merge request's comment lists it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'repository-limits-secret';
const FILE = '.hookbot.yml';
const LONG = 30_000;
const BOT = { username: 'rql-bot', token: 'rql-bot-token-0123456789', password: 'rql-bot-password' };
const CI = { username: 'rql-ci', token: 'rql-ci-token-0123456789' };
const ALICE = { username: 'rql-alice', token: 'rql-alice-token-0123456789' };

/** The operator's rules: `ship` merges when ci/test passed; `automerge` queues. */
const CENTRAL = `rules:
  - name: ship
    on: [merge_request.open, merge_request.update, status.changed]
    for: merge_requests
    if:
      - labels: { all: [ship] }
      - statuses: { required: [ci/test], state: success }
    do: [merge]
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if:
      - labels: { all: [automerge] }
    do:
      - queue: { statuses: [ci/test] }
`;

/** The repository's rule: every merge request's head gets ci/test: success from the bot. */
const SELF_APPROVE = `rules:
  - name: self-approve
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    do:
      - status: { name: ci/test, state: success, description: tests passed }
`;

describe('a .hookbot.yml and the operator merges (running bot, real HTTP)', () => {
  let sb: Sandbox;
  let runtime: Runtime;
  let admin: Client;
  let alice: Client;
  let ci: Client;
  let dir = '';
  let projectId = 0;

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'rql-root-token', hookTimeoutMs: 10_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-repository-limits-'));
    const ids = [BOT, CI, ALICE].map(
      (user: { username: string; token: string; password?: string }) =>
        addUser(sb.ctx.db, {
          username: user.username,
          private_token: user.token,
          ...(user.password !== undefined ? { password: user.password } : {}),
        }).id,
    );
    const group = addGroup(sb.ctx.db, {
      name: 'rql',
      owner_id: 1,
      members: [
        { user_id: ids[0]!, access_level: 40 },
        { user_id: ids[1]!, access_level: 30 },
        { user_id: ids[2]!, access_level: 30 },
      ],
    });
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
    alice = createClient({ baseUrl: sb.url, token: ALICE.token, retry: { limit: 0 } });
    ci = createClient({ baseUrl: sb.url, token: CI.token, retry: { limit: 0 } });
    projectId = (
      await addProject(sb.ctx, {
        name: 'web',
        namespace_id: group.id,
        creator_id: 1,
        initialFiles: { 'README.md': 'hello\n' },
      })
    ).id;

    mkdirSync(path.join(dir, 'rules'), { recursive: true });
    writeFileSync(path.join(dir, 'rules', 'default.yml'), CENTRAL);
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: path.join(dir, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: path.join(dir, 'rules'),
        HOOKBOT_IN_DOCKER: '0',
        HOOKBOT_REPOSITORY_RULES: 'true',
        // The merge queue fetches over git (a branch already up to date is not pushed).
        HOOKBOT_GIT_PASSWORD: BOT.password,
      },
      cwd: dir,
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 50;
    config.rules.watch = false;
    config.git.cache_dir = path.join(dir, 'git');
    // The settings under test: only the CI's account (and the bot, for the operator's rules) counts;
    // repositories may queue, serially (rules.repository.queue: the defaults).
    config.rules.status_authors = [CI.username];
    config.rules.repository.allow = ['queue'];
    runtime = await startRuntime(
      config,
      { log: createLogger({ level: 'silent', format: 'json' }), metrics: createMetrics() },
      { api: { url: sb.url, token: BOT.token }, webhookSecret: SECRET, scheduler: false },
    );
    await admin.hooks.create(projectId, {
      url: runtime.bot.hookUrl,
      token: SECRET,
      merge_requests_events: true,
      note_events: true,
      push_events: true,
      build_events: true,
    });
  });

  afterAll(async () => {
    await runtime?.close();
    await sb?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Writes the file on a branch (one commit); the branch's head then. */
  async function commitFile(branch: string, text: string, message: string): Promise<string> {
    const exists = await admin.files
      .get(projectId, FILE, branch)
      .then(() => true)
      .catch(() => false);
    const file = { file_path: FILE, branch_name: branch, content: text, commit_message: message };
    if (exists) await admin.files.update(projectId, file);
    else await admin.files.create(projectId, file);
    return (await admin.branches.get(projectId, branch)).commit.id;
  }

  async function configStatus(sha: string) {
    return waitFor(
      async () => {
        for await (const status of admin.statuses.list(projectId, sha))
          if (status.name === 'hookbot/config') return status;
        return undefined;
      },
      LONG,
      `hookbot/config on ${sha.slice(0, 8)}`,
    );
  }

  /** Alice's merge request from a new branch of master, labelled; its head. */
  async function openMergeRequest(branch: string, labels: string[]) {
    await alice.branches.create(projectId, { branch_name: branch, ref: 'master' });
    await alice.files.create(projectId, {
      file_path: `${branch}.txt`,
      branch_name: branch,
      content: `${branch}\n`,
      commit_message: `Add ${branch}`,
    });
    const head = (await admin.branches.get(projectId, branch)).commit.id;
    const mr = await alice.mergeRequests.create(projectId, {
      source_branch: branch,
      target_branch: 'master',
      title: `Add ${branch}`,
      labels,
    });
    return { mr, head };
  }

  /** The bot's ci/test rows on a commit (the whole history), once it has posted one. */
  async function botCiTest(head: string) {
    return waitFor(
      async () => {
        const rows = [];
        for await (const status of admin.statuses.list(projectId, head, { all: true }))
          if (status.name === 'ci/test' && status.author?.username === BOT.username) rows.push(status);
        return rows.length > 0 ? rows : undefined;
      },
      LONG,
      `the repository rule's ci/test on ${head.slice(0, 8)}`,
    );
  }

  const explain = (iid: number) =>
    fetch(`${runtime.bot.url}/explain/${encodeURIComponent('rql/web')}/mr/${iid}`).then((r) => r.text());

  const state = async (id: number) => (await admin.mergeRequests.get(projectId, id)).state;

  it('the file is taken: its rule may post statuses', async () => {
    const sha = await commitFile('master', SELF_APPROVE, 'Self-approving rules');
    expect((await configStatus(sha)).status).toBe('success');
  });

  it("a repository rule's ci/test: success merges nothing through the operator's merge rule; the CI's does", async () => {
    const { mr, head } = await openMergeRequest('feature', ['ship']);
    await botCiTest(head);

    // Alice's edit is an event the operator's rule hears (the bot's own status is not): it is
    // evaluated with the repository's ci/test on the head, and that status does not count.
    await alice.mergeRequests.update(projectId, mr.id, { title: 'Add feature (edited)' });
    const seen = await waitFor(
      async () => {
        const text = await explain(mr.iid);
        return /merge_request\.update/.test(text) && /[✓✗] ship/.test(text) ? text : undefined;
      },
      LONG,
      "the operator's rule evaluated after the edit",
    );
    await runtime.bot.pipeline.idle();
    expect(await state(mr.id)).toBe('opened');
    expect(seen).toMatch(/✗ statuses ci\/test are all success: ci\/test=missing/);
    // Posted once, marked: the executor finds its own status although it counts for nothing.
    const rows = await botCiTest(head);
    expect(rows.map((row) => [row.status, row.description])).toEqual([
      ['success', '[.hookbot.yml] tests passed'],
    ]);

    await ci.statuses.create(projectId, head, { state: 'success', name: 'ci/test' });
    await waitFor(async () => ((await state(mr.id)) === 'merged' ? true : undefined), LONG, 'the merge');
  });

  it('the merge queue waits for the CI, not for the repository rule', async () => {
    const { mr, head } = await openMergeRequest('queued', ['automerge']);
    await botCiTest(head);
    await waitFor(
      async () => (/merge queue: position 1/.test(await explain(mr.iid)) ? true : undefined),
      LONG,
      'queued',
    );
    await runtime.bot.pipeline.idle();
    await runtime.sweeps.run('merge_queue');
    expect(await state(mr.id)).toBe('opened');
    expect(await explain(mr.iid)).toMatch(/waiting for ci\/test/);

    await ci.statuses.create(projectId, head, { state: 'success', name: 'ci/test' });
    await waitFor(
      async () => {
        await runtime.sweeps.run('merge_queue');
        return (await state(mr.id)) === 'merged' ? true : undefined;
      },
      LONG,
      'the queue merges once the CI posted',
    );
  });

  it('a queue over the operator limits: the file is refused, hookbot/config failed with the problem', async () => {
    const sha = await commitFile(
      'master',
      `${SELF_APPROVE}  - name: team train
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if:
      - labels: { all: [team] }
    do:
      - queue: { statuses: [ci/test], name: team, depth: 3 }
`,
      'A train of our own',
    );
    const status = await configStatus(sha);
    expect(status.status).toBe('failed');
    expect(status.description).toBe(
      `13:58: queue depth 3 is over the 1 the operator allows repository rules (rule "team train"): depth is how many cars of a merge train tested at once, and the operator, who knows the CI's capacity, sets how large a repository's trains may be (write depth: 1 or less, or ask the operator to raise rules.repository.queue.max_depth (at most 20))`.slice(
        0,
        249,
      ) + '…',
    );
  });

  it("a merge request whose file joins the central rules' queue: the comment lists the problem", async () => {
    await admin.branches.create(projectId, { branch_name: 'join-queue', ref: 'master' });
    const head = await commitFile(
      'join-queue',
      `rules:
  - name: our automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if:
      - labels: { all: [ours] }
    do:
      - queue: { statuses: [ci/test] }
`,
      'Queue with the operator',
    );
    const mr = await admin.mergeRequests.create(projectId, {
      source_branch: 'join-queue',
      target_branch: 'master',
      title: 'Our own automerge',
    });
    expect((await configStatus(head)).status).toBe('failed');
    const comment = await waitFor(
      async () => {
        for await (const note of admin.notes.listMergeRequestNotes(projectId, mr.id))
          if (note.author.username === BOT.username && note.body.includes('**1 problem**')) return note.body;
        return undefined;
      },
      LONG,
      "the bot's comment",
    );
    expect(comment).toContain(
      `\`8:9: queue "default" is fed by the operator's rule "queue automerge" (${path.join(dir, 'rules', 'default.yml')}:9:5) (rule "our automerge"): a repository rule may not join a queue of the central rules`,
    );
  });
});
