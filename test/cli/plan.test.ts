/**
 * `hookbot plan` through `main()`, against the sandbox (demo seed, over HTTP): a proposed rules
 * folder against the rules in force (or nothing), on the open issues and merge requests of a
 * project, in the three formats; read-only; exit 0 with no problems, 1 with problems, 2 for a
 * wrong command line; the budget said when reached.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { DEMO_TOKENS } from '../../src/sandbox/seed.ts';
import { createFileStore } from '../../src/state/index.ts';

const temp = mkdtempSync(path.join(tmpdir(), 'hookbot-plan-'));

function rulesFolder(name: string, text: string): string {
  const dir = path.join(temp, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'default.yml'), text);
  return dir;
}

const CURRENT = rulesFolder(
  'current',
  `rules:
  - name: triage
    on: [issue.open]
    for: issues
    do:
      - label: { add: [needs-triage] }
`,
);

const PROPOSED = rulesFolder(
  'proposed',
  `rules:
  - name: support
    on: [issue.open, issue.update]
    for: issues
    do:
      - label: { add: [support] }
  - name: close-pinned
    on: [issue.update]
    for: issues
    if:
      - labels: { all: [pinned] }
    do: [close]
`,
);

const BROKEN = rulesFolder(
  'broken',
  `rules:
  - name: support
    on: [issue.opne]
    do: [close]
`,
);

async function plan(args: string[]) {
  const io = { out: '', err: '' };
  const code = await main(['plan', ...args], {
    out: (t) => void (io.out += t),
    err: (t) => void (io.err += t),
  });
  return { code, ...io };
}

describe('hookbot plan (against the sandbox)', () => {
  let sb: Sandbox;

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'plan-root-token' });
  });
  beforeEach(() => {
    vi.unstubAllEnvs();
    vi.stubEnv('HOOKBOT_API_URL', sb.url);
    vi.stubEnv('HOOKBOT_API_TOKEN', DEMO_TOKENS.hookbot);
    vi.stubEnv('HOOKBOT_CONFIG', '');
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    await sb?.close();
    rmSync(temp, { recursive: true, force: true });
  });

  const project = ['--project', 'acme/helpdesk'];

  it('text: what the proposed rules would change next to the rules in force; exit 0; nothing written', async () => {
    const before = JSON.stringify(sb.ctx.db.data.issues);
    const result = await plan(['--rules', PROPOSED, '--current', CURRENT, ...project]);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.out.split('\n')).toEqual([
      `hookbot plan: ${PROPOSED} against ${CURRENT}`,
      'acme/helpdesk: 3 open items evaluated',
      '  would add label support to 3 issues: #1, #2, #3',
      '  would close 1 issue: #1',
      '  would stop applying rule "triage" (label: add [needs-triage]) to 3 issues: #1, #2, #3',
      '',
    ]);
    expect(JSON.stringify(sb.ctx.db.data.issues)).toBe(before);
  });

  it('without --current, the configured rules folder is the one in force; with no --rules, nothing', async () => {
    vi.stubEnv('HOOKBOT_RULES', CURRENT);
    const against = await plan(['--rules', PROPOSED, ...project]);
    expect(against.code).toBe(0);
    expect(against.out).toContain(`hookbot plan: ${PROPOSED} against ${CURRENT}`);
    expect(against.out).toContain('would stop applying rule "triage"');
    const alone = await plan([...project]);
    expect(alone.out).toContain(`hookbot plan: ${CURRENT} against no rules`);
    expect(alone.out).toContain('would add label needs-triage to 2 issues: #1, #2');
  });

  it('against nothing, as markdown', async () => {
    const result = await plan(['--rules', PROPOSED, '--current', 'none', ...project, '--format', 'markdown']);
    expect(result.code).toBe(0);
    expect(result.out).toContain(`### hookbot plan: ${PROPOSED} against no rules`);
    expect(result.out).toContain('**acme/helpdesk** (3 open issues and merge requests evaluated):');
    expect(result.out).toContain('- would add label support to 3 issues: #1, #2, #3');
    expect(result.out).not.toContain('would stop');
  });

  it('as JSON, with the budget said when it is reached', async () => {
    const config = path.join(temp, 'config.yml');
    writeFileSync(config, 'rules:\n  repository:\n    plan_items: 2\n');
    const result = await plan([
      '--rules',
      PROPOSED,
      '--current',
      'none',
      ...project,
      '--format',
      'json',
      '--config',
      config,
    ]);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.out);
    expect(json.problems).toEqual([]);
    expect(json.projects).toHaveLength(1);
    expect(json.projects[0]).toMatchObject({
      project: 'acme/helpdesk',
      listed: 3,
      evaluated: 2,
      budgetReached: 'items',
      budget: { items: 2 },
    });
    expect(json.projects[0].changes).toContainEqual({
      what: 'would add label support to {items}|issue',
      kind: 'now',
      items: ['#1', '#2'],
    });
    const text = await plan(['--rules', PROPOSED, '--current', 'none', ...project, '--config', config]);
    expect(text.out).toContain(
      'budget reached: 2 of 3 open items evaluated (at most 2); the plan covers those only',
    );
  });

  it('the API call budget: listings count, and the plan stops where the calls ran out', async () => {
    const config = path.join(temp, 'calls.yml');
    writeFileSync(config, 'rules:\n  repository:\n    plan_api_calls: 2\n');
    const args = ['--rules', PROPOSED, '--current', 'none', ...project, '--config', config];
    const json = JSON.parse((await plan([...args, '--format', 'json'])).out);
    expect(json.projects[0]).toMatchObject({
      evaluated: 0,
      apiCalls: 2,
      budgetReached: 'apiCalls',
      listedAll: false,
      changes: [],
    });
    expect((await plan(args)).out).toContain(
      'budget reached: 2 API calls (at most 2) after 0 items; the plan covers those only',
    );
  });

  // Issue 37: plan said a merge request the queue took out would be queued again at the same head,
  // while the bot does not: it reads the bot's memory from the configured state.
  it("a merge request the queue took out at its head is not said to enter again, from the bot's state", async () => {
    const queueRules = rulesFolder(
      'queue',
      'rules:\n  - name: queue all\n    on: [merge_request.update]\n    for: merge_requests\n    do: [ { queue: { statuses: [ci/test], authors: anyone } } ]\n',
    );
    const api = `${sb.url}/api/v3`;
    const headers = { 'private-token': DEMO_TOKENS.hookbot };
    const web = (await (await fetch(`${api}/projects/acme%2Fweb`, { headers })).json()) as { id: number };
    const [mr] = (await (
      await fetch(`${api}/projects/${web.id}/merge_requests?state=opened`, { headers })
    ).json()) as { id: number; iid: number; sha: string }[];
    const stateWith = async (name: string, leftAt: string) => {
      const file = path.join(temp, name, 'hookbot.json');
      const store = createFileStore({ path: file });
      await store.open();
      await store.enqueue({
        itemKey: `merge_request:${web.id}:${mr!.id}`,
        project: 'acme/web',
        projectId: web.id,
        mrId: mr!.id,
        iid: mr!.iid,
        targetBranch: 'master',
        queue: 'default',
        rule: 'queue all',
        priority: 0,
        enqueuedAt: 1,
        required: ['ci/test'],
        statusTimeoutMs: 3_600_000,
        maxUpdates: 3,
        updates: 0,
        left: { at: 2, sha: leftAt, reason: 'ci/test failed' },
      });
      await store.close();
      return file;
    };
    const args = ['--rules', queueRules, '--current', 'none', '--project', 'acme/web'];
    const queued = `would put 1 merge request: !${mr!.iid} in the merge queue default for master`;

    vi.stubEnv('HOOKBOT_STATE', await stateWith('plan-left-here', mr!.sha));
    const here = await plan(args);
    expect(here.code).toBe(0);
    expect(here.out).not.toContain(queued);

    vi.stubEnv('HOOKBOT_STATE', await stateWith('plan-left-before', 'f'.repeat(40)));
    expect((await plan(args)).out).toContain(queued);

    // No state to read: the plan says what it cannot tell.
    vi.stubEnv('HOOKBOT_STATE', path.join(temp, 'plan-no-state', 'hookbot.json'));
    const unread = await plan(args);
    expect(unread.out).toContain(queued);
    expect(unread.out).toContain(
      `the queue's memory was not read (no state file at ${path.join(temp, 'plan-no-state', 'hookbot.json')})`,
    );
  });

  it('exit 1 with the problems of a rules folder, each as file:line:column', async () => {
    const result = await plan(['--rules', BROKEN, ...project]);
    expect(result.code).toBe(1);
    expect(result.out).toContain(`${path.join(BROKEN, 'default.yml')}:3:10:`);
    expect(result.err).toContain('the rules have problems');
  });

  it('exit 1 for a project the bot does not see; exit 2 for a wrong command line', async () => {
    const missing = await plan(['--rules', PROPOSED, '--project', 'acme/helpdesks']);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('no project acme/helpdesks');
    expect((await plan(['--rules', PROPOSED, '--format', 'yaml'])).code).toBe(2);
    expect((await plan(['--rules', PROPOSED, '--project', 'nope'])).code).toBe(2);
  });
});
