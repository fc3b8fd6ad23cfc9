/**
 * `hookbot simulate` through `main()`: offline from hook fixtures (what the payload lacks is named),
 * and against the sandbox (demo seed) with deliveries it really sent, where the item is read fresh
 * through a counting proxy: only GETs reach the server, and nothing changes.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { main } from '../../src/cli/main.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { createFileStore, createPostgresStore } from '../../src/state/index.ts';
import { newSchemaName, postgresAvailable, TEST_DATABASE_URL } from '../helpers/postgres.ts';
import { DEMO_TOKENS } from '../../src/sandbox/seed.ts';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.ts';

const EXAMPLE_RULES = 'test/fixtures/rules/example';
const fixturePath = (name: string) => `test/fixtures/hooks/${name}`;
const fixture = (name: string): Record<string, any> => JSON.parse(readFileSync(fixturePath(name), 'utf8'));

const temp = mkdtempSync(path.join(tmpdir(), 'hookbot-simulate-'));
let written = 0;
/** Writes a delivery body to a file of its own and returns its path. */
function deliveryFile(body: unknown): string {
  const file = path.join(temp, `delivery-${++written}.json`);
  writeFileSync(file, typeof body === 'string' ? body : JSON.stringify(body));
  return file;
}

async function simulate(args: string[]) {
  const io = { out: '', err: '' };
  const code = await main(['simulate', ...args], {
    out: (t) => void (io.out += t),
    err: (t) => void (io.err += t),
  });
  return { code, ...io };
}

afterEach(() => {
  vi.unstubAllEnvs();
});
afterAll(() => {
  rmSync(temp, { recursive: true, force: true });
});

describe('hookbot simulate, offline (from the payload alone)', () => {
  it('evaluates the rules on an issue payload and says which facts it had to assume', async () => {
    const result = await simulate(['--event', fixturePath('issue.json'), '--rules', EXAMPLE_RULES]);
    expect(result.code).toBe(0);
    expect(result.err).toBe('');
    const lines = result.out.split('\n');
    expect(lines.slice(0, 2)).toEqual([
      'Issue Hook from test/fixtures/hooks/issue.json',
      'state: from the payload alone (offline: give --api and --token to read it fresh)',
    ]);
    expect(lines).toContain('== issue:14:301 (rules: test/fixtures/rules/example/default.yml)');
    expect(lines).toContain('  - labels: none (payloads of that era carry no labels)');
    expect(lines).toContain(
      'issue #23 in gitlabhq/gitlab-test: "New API: create/update/delete file" (opened), labels []',
    );
    expect(lines).toContain(
      '✗ triage bug reports (test/fixtures/rules/example/default.yml:3): did not match',
    );
    expect(lines).toContain('    ✗ title matches /\\b(bug|crash)\\b/i: "New API: create/update/delete file"');
    expect(lines).toContain('plan: nothing to do');
    expect(lines.at(-2)).toBe('simulation: no call was made and nothing was written');
  });

  it('shows the planned calls of a matching rule, described by the dry-run executor', async () => {
    const body = fixture('issue.json');
    body.object_attributes.title = 'Crash on start';
    const result = await simulate(['--event', deliveryFile(body), '--rules', EXAMPLE_RULES]);
    expect(result.code).toBe(0);
    const lines = result.out.split('\n');
    expect(lines).toContain('✓ triage bug reports (test/fixtures/rules/example/default.yml:3): matched');
    expect(lines).toContain('    ✓ title matches /\\b(bug|crash)\\b/i: "Crash on start"');
    expect(lines).toContain('plan (2 calls):');
    expect(lines).toContain(
      '  1. issues.update labels=[bug, needs-triage]  [triage bug reports] add bug, needs-triage',
    );
    expect(lines).toContain('  → comment: post "Thanks @root, a maintainer will look at this soon."');
    expect(lines).toContain('execution (dry run: no call made):');
    expect(lines.filter((line) => /^ {2}\d\. dry-run: /.test(line))).toHaveLength(2);
  });

  it('prints the evaluation as JSON with --json', async () => {
    const body = fixture('issue.json');
    body.object_attributes.title = 'Crash on start';
    const result = await simulate(['--event', deliveryFile(body), '--rules', EXAMPLE_RULES, '--json']);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.out);
    expect(json).toMatchObject({
      event: 'Issue Hook',
      source: 'payload',
      dryRun: true,
      problems: [],
      remarks: [],
    });
    expect(json.items).toHaveLength(1);
    const [item] = json.items;
    expect(item.itemKey).toBe('issue:14:301');
    expect(item.unknown).toContainEqual({
      field: 'labels',
      assumed: 'none (payloads of that era carry no labels)',
    });
    expect(item.evaluation.summary).toEqual({ rules: 5, applied: 2, matched: 1, calls: 2 });
    expect(item.evaluation.rules[0]).toMatchObject({ rule: 'triage bug reports', matched: true });
    expect(item.execution).toMatchObject({ dryRun: true, counts: { 'dry-run': 2, done: 0 } });
  });

  it('lists the head statuses of a merge request as unknown: a condition on them never holds offline', async () => {
    const result = await simulate([
      '--event',
      fixturePath('merge_request-update.json'),
      '--rules',
      EXAMPLE_RULES,
    ]);
    expect(result.code).toBe(0);
    const lines = result.out.split('\n');
    expect(lines).toContain('  - statuses of the head commit: unknown: conditions on them never hold');
    expect(lines).toContain('  - votes: 0 up, 0 down');
    expect(lines).toContain(
      '    ? statuses ci/build, ci/test are all success: unknown (the statuses of the head commit were not read)',
    );
    expect(lines).toContain(
      'merge request !1 in awesome_space/awesome_project: "MS-Viewport" (opened, head da156088), labels []',
    );
  });

  it('takes the labels of payloads that carry them (later servers), and lists them as known', async () => {
    const body = fixture('issue.json');
    body.object_attributes.title = 'Crash on start';
    body.labels = [{ title: 'bug' }, { title: 'ui' }];
    const result = await simulate(['--event', deliveryFile(body), '--rules', EXAMPLE_RULES, '--json']);
    const [item] = JSON.parse(result.out).items;
    expect(item.unknown.map((field: { field: string }) => field.field)).not.toContain('labels');
    expect(item.evaluation.item.labels).toEqual(['bug', 'ui']);
    expect(item.evaluation.rules[0]).toMatchObject({ rule: 'triage bug reports', matched: false });
  });

  it("picks the project's own rule file from the payload's project path", async () => {
    const body = fixture('issue.json');
    body.project.path_with_namespace = 'acme/web';
    body.object_attributes.title = 'A bug in the menu';
    const result = await simulate(['--event', deliveryFile(body), '--rules', 'test/fixtures/rules/projects']);
    expect(result.code).toBe(0);
    expect(result.out).toContain('== issue:14:301 (rules: test/fixtures/rules/projects/acme/web.yml)');
    expect(result.out).toContain('✓ web triage');
    expect(result.out).toContain('✓ welcome');
  });

  it('fills object_kind from --kind for a body saved without it', async () => {
    const { object_kind: _kind, ...body } = fixture('note-issue.json');
    const result = await simulate([
      '--event',
      deliveryFile(body),
      '--kind',
      'Note Hook',
      '--rules',
      EXAMPLE_RULES,
    ]);
    expect(result.code).toBe(0);
    expect(result.out.split('\n')[0]).toBe(`Note Hook from ${path.join(temp, `delivery-${written}.json`)}`);
    expect(result.out).toContain('event note.created by @root');
  });

  it.each([
    ['tag_push.json', 0, 'concerns no issue or merge request; the bot evaluates nothing'],
    ['wiki_page.json', 0, 'concerns no issue or merge request; the bot evaluates nothing'],
    [
      'push.json',
      1,
      'a push to branch master of project 15 concerns the open merge requests whose source branch it is: finding them needs the server (give --api and --token)',
    ],
    [
      'build.json',
      1,
      'concerns the open merge requests whose head commit it is: finding them needs the server (give --api and --token)',
    ],
  ])('%s: exit %i, saying why', async (name, code, message) => {
    const result = await simulate(['--event', fixturePath(name), '--rules', EXAMPLE_RULES]);
    expect(result.code).toBe(code);
    expect(result.out).toContain(message);
  });

  // Issue 37: simulate said a merge request the queue took out would be queued again at the same
  // head, while the bot (rightly) does not: it now reads the bot's memory from its state.
  it("says a merge request the queue took out at this head is not queued again, from the bot's state file", async () => {
    const rules = path.join(temp, 'queue-rules');
    mkdirSync(rules, { recursive: true });
    writeFileSync(
      path.join(rules, 'default.yml'),
      'rules:\n  - name: queue all\n    on: [merge_request.update]\n    for: merge_requests\n    do: [ { queue: { statuses: [ci/test], authors: anyone } } ]\n',
    );
    const event = fixturePath('merge_request-update.json');
    const head = 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7';
    const stateWith = async (name: string, leftAt: string) => {
      const file = path.join(temp, name, 'hookbot.json');
      const store = createFileStore({ path: file });
      await store.open();
      await store.enqueue({
        itemKey: 'merge_request:14:99',
        project: 'awesome_space/awesome_project',
        projectId: 14,
        mrId: 99,
        iid: 1,
        targetBranch: 'master',
        queue: 'default',
        rule: 'queue all',
        priority: 0,
        enqueuedAt: 1,
        required: ['ci/test'],
        statusTimeoutMs: 3_600_000,
        maxUpdates: 3,
        updates: 0,
        left: { at: 2, sha: leftAt, reason: 'ci/test failed on da15608' },
      });
      await store.close();
      return file;
    };

    const same = await simulate([
      '--event',
      event,
      '--rules',
      rules,
      '--state',
      await stateWith('left-here', head),
    ]);
    expect(same.code).toBe(0);
    expect(same.out).toContain(
      '  1. skipped: mergeQueue.enqueue iid=1 sha=da156088 project_path="awesome_space/awesome_project" target_branch="master" queue="default" priority=0 required=[ci/test] status_timeout_ms=3600000 max_updates=3: not queued again: it left the default queue at da15608 (ci/test failed on da15608); a push, the rule matching anew, or a member\'s new comment command lets it in',
    );
    expect(same.out).not.toContain('would call mergeQueue.enqueue');
    expect(same.out).toContain(
      `queue: the bot's memory read from ${path.join(temp, 'left-here', 'hookbot.json')}`,
    );

    // Taken out at another head: a push came since, and it enters again, as on the bot.
    const other = await simulate([
      '--event',
      event,
      '--rules',
      rules,
      '--state',
      await stateWith('left-before', 'f'.repeat(40)),
    ]);
    expect(other.out).toContain('dry-run: mergeQueue.enqueue');
    expect(other.out).toContain(': would call mergeQueue.enqueue');

    // Without the bot's state, the answer says what it cannot tell.
    const none = await simulate(['--event', event, '--rules', rules]);
    expect(none.out).toContain(
      "the queue's memory was not read (no state given: --state FILE (a stopped bot's) or --database URL): a merge request the queue took out at this head would not enter again, which this answer cannot tell",
    );
  });

  it('refuses rules with problems, listing them, with exit 1', async () => {
    const result = await simulate([
      '--event',
      fixturePath('issue.json'),
      '--rules',
      'test/fixtures/rules/broken',
    ]);
    expect(result.code).toBe(1);
    expect(result.err).toContain('the rules have problems');
    expect(result.err).toContain(
      '  test/fixtures/rules/broken/default.yml:5:9: unknown condition "titel" (did you mean "title"?)',
    );
  });

  it.each([
    {
      name: 'an unreadable file',
      args: () => ['--event', path.join(temp, 'missing.json')],
      code: 1,
      message: 'missing.json: cannot read the delivery: ENOENT',
    },
    {
      name: 'a file that is not JSON',
      args: () => ['--event', deliveryFile('{ not json')],
      code: 1,
      message: 'cannot read the delivery: not JSON',
    },
    {
      name: 'an object_kind of no hook',
      args: () => ['--event', deliveryFile({ object_kind: 'constructor' })],
      code: 1,
      message: 'unknown object_kind "constructor"',
    },
    {
      name: 'a payload that does not fit its kind',
      args: () => ['--event', deliveryFile({ object_kind: 'issue', object_attributes: {} })],
      code: 1,
      message: 'issue payload: object_attributes.id',
    },
  ])('exits $code on $name', async ({ args, code, message }) => {
    const result = await simulate([...args(), '--rules', EXAMPLE_RULES]);
    expect(result.code).toBe(code);
    expect(result.err).toContain(message);
  });

  it.each([
    {
      name: 'no --event',
      args: ['--rules', EXAMPLE_RULES],
      message: "required option '--event <file>' not specified",
    },
    {
      name: 'an unknown --kind',
      args: ['--event', fixturePath('issue.json'), '--kind', 'Issue'],
      message: "--kind must be an X-Gitlab-Event header: 'Push Hook'",
    },
    {
      name: 'a --kind the payload contradicts',
      args: ['--event', fixturePath('issue.json'), '--kind', 'Merge Request Hook'],
      message: `--kind 'Merge Request Hook' carries object_kind "merge_request", but test/fixtures/hooks/issue.json says "issue"`,
    },
    {
      name: 'a body without object_kind and no --kind',
      args: () => ['--event', deliveryFile({ object_attributes: { id: 1 } })],
      message: 'has no object_kind: say which hook it is with --kind',
    },
    {
      name: '--token without --api',
      args: ['--event', fixturePath('issue.json'), '--token', 'secret'],
      message: '--token needs --api URL',
    },
    {
      name: '--api without a token',
      args: ['--event', fixturePath('issue.json'), '--api', 'http://127.0.0.1:9'],
      message: '--api needs --token T (or HOOKBOT_API_TOKEN)',
    },
  ])('exits 2 on $name', async ({ args, message }) => {
    vi.stubEnv('HOOKBOT_API_TOKEN', '');
    const result = await simulate([
      ...(typeof args === 'function' ? args() : args),
      '--rules',
      EXAMPLE_RULES,
    ]);
    expect(result.code).toBe(2);
    expect(result.err).toContain(message);
  });
});

/** A hook receiver that keeps what the sandbox sends. */
async function startCapture(): Promise<{
  url: string;
  received: { event: string; body: Record<string, any> }[];
  close: () => Promise<void>;
}> {
  const received: { event: string; body: Record<string, any> }[] = [];
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      received.push({ event: String(req.headers['x-gitlab-event']), body: JSON.parse(text) });
      res.writeHead(200).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('hookbot simulate --api, against the sandbox (demo seed)', () => {
  let sb: Sandbox;
  let proxy: FaultProxy;
  let capture: Awaited<ReturnType<typeof startCapture>>;
  const writes = () => ['POST', 'PUT', 'PATCH', 'DELETE'].reduce((sum, m) => sum + proxy.arrived(m, /./), 0);

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'simulate-root-token', hookTimeoutMs: 2_000 });
    proxy = await startFaultProxy(sb.url);
    capture = await startCapture();
    const admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    await admin.hooks.create('acme/web', {
      url: capture.url,
      issues_events: true,
      push_events: true,
      merge_requests_events: true,
    });
  });
  afterAll(async () => {
    await capture?.close();
    await proxy?.close();
    await sb?.close();
  });

  /** Opens an issue as `token`'s user and returns the Issue Hook the sandbox delivered for it. */
  async function openIssue(token: string, title: string, labels: string[]) {
    const issue = await createClient({ baseUrl: sb.url, token }).issues.create('acme/web', { title, labels });
    await sb.ctx.hooks.idle();
    const delivery = capture.received.find(
      (d) => d.event === 'Issue Hook' && d.body.object_attributes.id === issue.id,
    );
    if (!delivery) throw new Error('the sandbox delivered no Issue Hook for the issue');
    return { issue, file: deliveryFile(delivery.body) };
  }

  const online = (file: string, extra: string[] = []) =>
    simulate([
      '--event',
      file,
      '--kind',
      'Issue Hook',
      '--rules',
      EXAMPLE_RULES,
      '--api',
      proxy.url,
      '--token',
      DEMO_TOKENS.hookbot,
      ...extra,
    ]);

  it('reads the issue fresh (labels included), matches the triage rule and writes nothing', async () => {
    const { issue, file } = await openIssue(DEMO_TOKENS.alice, 'Crash on empty search input', ['ui']);
    const before = { writes: writes(), reads: proxy.arrived('GET', /./) };
    const result = await online(file, ['--json']);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    const json = JSON.parse(result.out);
    expect(json.source).toBe('api');
    const [item] = json.items;
    expect(item.unknown).toEqual([]);
    expect(item.evaluation.item).toMatchObject({ id: issue.id, project: 'acme/web', labels: ['ui'] });
    // Who opened it is not taken from the payload: the API cannot confirm who caused an event.
    expect(item.evaluation.trigger).toEqual({ kind: 'issue', action: 'open', byBot: false });
    const triage = item.evaluation.rules.find((rule: any) => rule.rule === 'triage bug reports');
    expect(triage).toMatchObject({ applies: true, matched: true });
    expect(triage.conditions.map((c: any) => [c.describe, c.value, c.ok])).toEqual([
      ['title matches /\\b(bug|crash)\\b/i', 'Crash on empty search input', true],
      ['labels include none of [bug]', ['ui'], true],
    ]);
    expect(item.evaluation.plan.map((call: any) => call.call.op)).toEqual([
      'issues.update',
      'notes.createIssueNote',
    ]);
    expect(item.evaluation.plan[0].call.args.edit.labels).toEqual(['ui', 'bug', 'needs-triage']);
    expect(item.execution.counts).toMatchObject({ 'dry-run': 2, done: 0 });

    // Read through the API, and not one write: the issue is as it was.
    expect(proxy.arrived('GET', /./)).toBeGreaterThan(before.reads);
    expect(writes()).toBe(before.writes);
    expect(writes()).toBe(0);
    const admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    expect((await admin.issues.get('acme/web', issue.id)).labels).toEqual(['ui']);
    const notes = [];
    for await (const note of admin.notes.listIssueNotes('acme/web', issue.id)) notes.push(note);
    expect(notes).toEqual([]);
  });

  it('sees labels the payload does not carry: an issue already labelled bug is left alone', async () => {
    const { file } = await openIssue(DEMO_TOKENS.alice, 'Crash when saving', ['bug']);
    const offline = await simulate(['--event', file, '--rules', EXAMPLE_RULES]);
    expect(offline.out).toContain('✓ triage bug reports');
    const result = await online(file);
    expect(result.code).toBe(0);
    const lines = result.out.split('\n');
    expect(lines[1]).toBe(`state: read fresh from ${proxy.url}/api/v3 as @hookbot (reads only)`);
    expect(lines).toContain(
      '✗ triage bug reports (test/fixtures/rules/example/default.yml:3): did not match',
    );
    expect(lines).toContain('    ✗ labels include none of [bug]: [bug]');
    expect(lines).toContain('plan: nothing to do');
    expect(writes()).toBe(0);
  });

  it("knows the bot's own events from the token's user: no rule applies to them", async () => {
    const { file } = await openIssue(DEMO_TOKENS.hookbot, 'Bot-filed crash report', []);
    const result = await online(file);
    expect(result.code).toBe(0);
    expect(result.out).toContain(
      '- triage bug reports (test/fixtures/rules/example/default.yml:3): does not apply: the bot caused the event (allow_bot is off)',
    );
    expect(writes()).toBe(0);
  });

  it('finds the open merge requests a push concerns, each read at its current head', async () => {
    const alice = createClient({ baseUrl: sb.url, token: DEMO_TOKENS.alice });
    await alice.files.create('acme/web', {
      file_path: 'docs/search.md',
      branch_name: 'feature/search',
      content: 'Search ignores case.\n',
      commit_message: 'Document the search',
    });
    await sb.ctx.hooks.idle();
    const push = capture.received.find(
      (d) => d.event === 'Push Hook' && d.body.ref === 'refs/heads/feature/search',
    );
    if (!push) throw new Error('the sandbox delivered no Push Hook for the branch');
    const file = deliveryFile(push.body);
    const offline = await simulate(['--event', file, '--rules', EXAMPLE_RULES]);
    expect(offline.code).toBe(1);

    const result = await simulate([
      '--event',
      file,
      '--rules',
      EXAMPLE_RULES,
      '--api',
      proxy.url,
      '--token',
      DEMO_TOKENS.hookbot,
      '--json',
    ]);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.out);
    expect(json.items).toHaveLength(1);
    const [item] = json.items;
    expect(item.evaluation.item).toMatchObject({ kind: 'merge_request', title: 'Add project search' });
    expect(item.evaluation.item.sha).toBe(push.body.after);
    expect(item.evaluation.event).toBe('push');
    expect(writes()).toBe(0);
  });

  it('says so when a push concerns no open merge request, and exits 0', async () => {
    const alice = createClient({ baseUrl: sb.url, token: DEMO_TOKENS.alice });
    await alice.files.create('acme/web', {
      file_path: 'docs/notes.md',
      branch_name: 'master',
      content: 'Notes.\n',
      commit_message: 'Add notes',
    });
    await sb.ctx.hooks.idle();
    const push = capture.received.find((d) => d.event === 'Push Hook' && d.body.ref === 'refs/heads/master');
    if (!push) throw new Error('the sandbox delivered no Push Hook for master');
    const result = await simulate([
      '--event',
      deliveryFile(push.body),
      '--rules',
      EXAMPLE_RULES,
      '--api',
      proxy.url,
      '--token',
      DEMO_TOKENS.hookbot,
    ]);
    expect(result.code).toBe(0);
    expect(result.out).toContain(
      `a push to branch master of project ${push.body.project_id}: no open merge request has it as its source branch; the bot evaluates nothing`,
    );
    expect(writes()).toBe(0);
  });

  it('exits 1 when the server cannot be reached', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const result = await simulate([
      '--event',
      fixturePath('issue.json'),
      '--rules',
      EXAMPLE_RULES,
      '--api',
      `http://127.0.0.1:${port}`,
      '--token',
      DEMO_TOKENS.hookbot,
    ]);
    expect(result.code).toBe(1);
    expect(result.err).toContain('hookbot simulate: could not reach the server: GET /user failed');
  });

  it('exits 1 with the server’s answer when the token is refused', async () => {
    const { file } = await openIssue(DEMO_TOKENS.alice, 'Another crash', []);
    const result = await simulate([
      '--event',
      file,
      '--rules',
      EXAMPLE_RULES,
      '--api',
      proxy.url,
      '--token',
      'wrong',
    ]);
    expect(result.code).toBe(1);
    expect(result.err).toContain('hookbot simulate: the server answered:');
    expect(result.err).toContain('401');
    expect(result.err).not.toContain('wrong');
    expect(writes()).toBe(0);
  });
});

describe.skipIf(!postgresAvailable)(
  "hookbot simulate --database: the queue's memory from the replicas' database",
  () => {
    it('reads it read-only and says the merge request taken out at this head is not queued again', async () => {
      const schema = newSchemaName();
      const rules = path.join(temp, 'queue-rules-db');
      mkdirSync(rules, { recursive: true });
      writeFileSync(
        path.join(rules, 'default.yml'),
        'rules:\n  - name: queue all\n    on: [merge_request.update]\n    for: merge_requests\n    do: [ { queue: { statuses: [ci/test], authors: anyone } } ]\n',
      );
      const store = createPostgresStore({ url: TEST_DATABASE_URL, schema, replicaId: 'simulate-test' });
      await store.open();
      await store.enqueue({
        itemKey: 'merge_request:14:99',
        project: 'awesome_space/awesome_project',
        projectId: 14,
        mrId: 99,
        iid: 1,
        targetBranch: 'master',
        queue: 'default',
        rule: 'queue all',
        priority: 0,
        enqueuedAt: 1,
        required: ['ci/test'],
        statusTimeoutMs: 3_600_000,
        maxUpdates: 3,
        updates: 0,
        left: { at: 2, sha: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7', reason: 'ci/test failed on da15608' },
      });
      await store.close();
      const result = await simulate([
        '--event',
        fixturePath('merge_request-update.json'),
        '--rules',
        rules,
        '--database',
        TEST_DATABASE_URL,
        '--database-schema',
        schema,
      ]);
      expect(result.code).toBe(0);
      expect(result.out).toContain(
        ': not queued again: it left the default queue at da15608 (ci/test failed on da15608)',
      );
      expect(result.out).toContain(`queue: the bot's memory read from the state database`);
      // HOOKBOT_DATABASE_URL alone is enough, as for explain.
      vi.stubEnv('HOOKBOT_DATABASE_URL', TEST_DATABASE_URL);
      const byDefault = await simulate([
        '--event',
        fixturePath('merge_request-update.json'),
        '--rules',
        rules,
        '--database-schema',
        schema,
      ]);
      expect(byDefault.out).toContain(': not queued again: it left the default queue at da15608');
    });
  },
);
