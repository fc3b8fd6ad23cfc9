/**
 * Rules in the repository (docs/repository-rules.md), over real HTTP: the sandbox delivers its
 * hooks to the bot (`startRuntime`, as `hookbot serve` runs it) and the bot reads each project's
 * `.hookbot.yml` through the files API.
 *
 * acme/web: the file added, broken (the last good rules stay), refused by the allow-list, fixed,
 * removed (the central rules only), each with its `hookbot/config` status on the commit.
 * acme/helpdesk: a merge request that changes the file gets the status on its head and one
 * comment, edited in place on each push, with the problems or the plan on the seeded issues.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { DEMO_TOKENS } from '../../src/sandbox/seed.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { waitFor } from '../helpers/wait-for.ts';

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

const SECRET = 'repository-rules-secret';
const FILE = '.hookbot.yml';

/** The operator's rules: every new issue is labelled `seen` (a sign that the bot evaluated it). */
const CENTRAL = `rules:
  - name: seen
    on: [issue.open]
    for: issues
    do:
      - label: { add: [seen] }
`;

const TRIAGE_V1 = `rules:
  - name: triage
    on: [issue.open]
    for: issues
    do:
      - label: { add: [needs-triage] }
`;

// A tab where YAML wants spaces: the same message as hookbot check.
const BROKEN = `rules:
  - name: triage
    on: [issue.open]
\tdo: [close]
`;

const MERGES = `rules:
  - name: automerge
    on: [merge_request.update]
    if:
      - statuses: { required: [ci/build], state: success }
    do:
      - merge
`;

const TRIAGE_V2 = `rules:
  - name: triage
    on: [issue.open]
    for: issues
    do:
      - label: { add: [triage-v2] }
`;

describe('rules in the repository: .hookbot.yml (over HTTP, the bot as it runs)', () => {
  let sb: Sandbox;
  let runtime: Runtime;
  let dir = '';
  let admin: Client;
  let web = 0;
  let helpdesk = 0;

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'repository-root-token', hookTimeoutMs: 5_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-repository-'));
    mkdirSync(path.join(dir, 'rules'));
    writeFileSync(path.join(dir, 'rules', 'default.yml'), CENTRAL);
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: path.join(dir, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: path.join(dir, 'rules'),
        HOOKBOT_IN_DOCKER: '0',
        HOOKBOT_REPOSITORY_RULES: 'true',
      },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 50;
    config.rules.watch = false;
    runtime = await startRuntime(
      config,
      { log: createLogger({ level: 'silent', format: 'json' }), metrics: createMetrics() },
      { api: { url: sb.url, token: DEMO_TOKENS.hookbot }, webhookSecret: SECRET, scheduler: false },
    );
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    web = (await admin.projects.get('acme/web')).id;
    helpdesk = (await admin.projects.get('acme/helpdesk')).id;
    for (const project of [web, helpdesk]) await addHook(project);
  });

  const addHook = (project: number) =>
    admin.hooks.create(project, {
      url: runtime.bot.hookUrl,
      token: SECRET,
      issues_events: true,
      merge_requests_events: true,
      note_events: true,
      push_events: true,
    });

  afterAll(async () => {
    await runtime?.close();
    await sb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Writes the file on a branch (one commit, one push); the commit's sha. */
  async function commitFile(project: number, branch: string, text: string | null, message: string) {
    const exists = await admin.files
      .get(project, FILE, branch)
      .then(() => true)
      .catch(() => false);
    const file = { file_path: FILE, branch_name: branch, content: text ?? '', commit_message: message };
    if (text === null)
      await admin.http.request({
        method: 'DELETE',
        route: '/projects/:id/repository/files',
        params: { id: project },
        body: { file_path: FILE, branch_name: branch, commit_message: message },
        idempotent: false,
      });
    else if (exists) await admin.files.update(project, file);
    else await admin.files.create(project, file);
    return (await admin.branches.get(project, branch)).commit.id;
  }

  /** The latest `hookbot/config` status of a commit, once there is one. */
  async function configStatus(project: number, sha: string, state?: string) {
    return waitFor(
      async () => {
        for await (const status of admin.statuses.list(project, sha))
          if (status.name === 'hookbot/config' && (state === undefined || status.status === state))
            return status;
        return undefined;
      },
      20_000,
      `hookbot/config ${state ?? ''} on ${sha.slice(0, 8)}`,
    );
  }

  /** Opens an issue and waits until the bot has labelled it `seen`; its labels then. */
  let lastIssue = 0;
  async function openIssue(title: string): Promise<string[]> {
    const issue = await admin.issues.create(web, { title });
    lastIssue = issue.iid;
    return waitFor(
      async () => {
        const labels = (await admin.issues.get(web, issue.id)).labels;
        return labels.includes('seen') ? labels : undefined;
      },
      20_000,
      `the bot's labels on "${title}"`,
    );
  }

  it('added: the rules of the file apply after the central ones; hookbot/config success on its commit', async () => {
    const sha = await commitFile(web, 'master', TRIAGE_V1, 'Add .hookbot.yml');
    const status = await configStatus(web, sha);
    expect(status.status).toBe('success');
    expect(status.description).toBe('1 rule in force');
    expect((await openIssue('First after the file')).sort()).toEqual(['needs-triage', 'seen']);
    // The decision is recorded once the run's actions are done: the labels can show a moment before.
    const explain = await waitFor(
      async () => {
        const text = await (await fetch(`${runtime.bot.url}/explain/acme%2Fweb/issue/${lastIssue}`)).text();
        return text.includes('no decision recorded') ? undefined : text;
      },
      20_000,
      'the decision of the issue',
    );
    expect(explain).toContain('✓ triage (acme/web:.hookbot.yml:2): matched');
  });

  it('broken: the last good rules stay in force; failed with the first problem as line:column: message; on the status page', async () => {
    const sha = await commitFile(web, 'master', BROKEN, 'Break .hookbot.yml');
    const status = await configStatus(web, sha);
    expect(status.status).toBe('failed');
    expect(status.description).toBe('4:1: YAML: Tabs are not allowed as indentation');
    expect((await openIssue('While the file is broken')).sort()).toEqual(['needs-triage', 'seen']);
    const page = await (await fetch(`${runtime.bot.url}/status`)).text();
    expect(page).toContain('Repository rules');
    expect(page).toContain('4:1: YAML: Tabs are not allowed as indentation');
    expect(page).toContain('the last good rules stay in force');
  });

  it('refused by the allow-list: a merge needs the operator, said with the place and what to do', async () => {
    const sha = await commitFile(web, 'master', MERGES, 'Automerge from the repository');
    const status = await configStatus(web, sha);
    expect(status.status).toBe('failed');
    expect(status.description).toBe(
      '7:9: action "merge" is not allowed in repository rules (rule "automerge"): it needs the operator\'s permission (ask the operator to add merge to rules.repository.allow, or to move the rule to the central rules)',
    );
    expect((await openIssue('While merges are refused')).sort()).toEqual(['needs-triage', 'seen']);
  });

  it('fixed: the new rules replace the last good ones', async () => {
    const sha = await commitFile(web, 'master', TRIAGE_V2, 'Fix .hookbot.yml');
    expect((await configStatus(web, sha)).status).toBe('success');
    expect((await openIssue('After the fix')).sort()).toEqual(['seen', 'triage-v2']);
  });

  it('removed: the central rules only', async () => {
    await commitFile(web, 'master', null, 'Remove .hookbot.yml');
    await waitFor(
      async () => {
        const status = (await (await fetch(`${runtime.bot.url}/status.json`)).json()) as {
          repositoryRules?: { project: string }[];
        };
        return status.repositoryRules?.some((entry) => entry.project === 'acme/web') ? undefined : true;
      },
      20_000,
      'acme/web without repository rules',
    );
    expect(await openIssue('After the removal')).toEqual(['seen']);
  });

  it('a push the bot never heard of: the reconcile sweep reads the file again', async () => {
    const hook = (await collect(admin.hooks.list(web))).find((one) => one.url === runtime.bot.hookUrl)!;
    await admin.hooks.remove(web, hook.id);
    const sha = await commitFile(web, 'master', TRIAGE_V1, 'Add .hookbot.yml again, unheard');
    await sb.ctx.hooks.idle();
    await addHook(web);
    await runtime.sweeps.run('reconcile');
    expect((await configStatus(web, sha)).status).toBe('success');
    expect((await openIssue('After the sweep')).sort()).toEqual(['needs-triage', 'seen']);
  });

  it('a scheduled repository rule runs in the rule sweep', async () => {
    const sha = await commitFile(
      web,
      'master',
      `rules:
  - name: sweep-one
    schedule: daily
    for: issues
    if:
      - title: 'After the sweep'
    do:
      - label: { add: [swept] }
`,
      'A scheduled rule',
    );
    expect((await configStatus(web, sha)).status).toBe('success');
    await runtime.sweeps.run('rules', { force: true });
    const issues = await collect(admin.issues.list(web, { state: 'opened' }));
    const swept = issues.filter((issue) => issue.labels.includes('swept')).map((issue) => issue.title);
    expect(swept).toEqual(['After the sweep']);
  });

  describe('a merge request that changes .hookbot.yml', () => {
    const branch = 'hookbot-config';
    let mrId = 0;

    let noteId = 0;

    /** The bot's notes on the merge request (by the server's author). */
    async function botNotes(): Promise<string[]> {
      const bodies: string[] = [];
      for await (const note of admin.notes.listMergeRequestNotes(helpdesk, mrId))
        if (note.author.username === 'hookbot') {
          bodies.push(note.body);
          noteId ||= note.id;
          expect(note.id, 'the same note, edited').toBe(noteId);
        }
      return bodies;
    }

    async function commentShowing(text: string): Promise<string> {
      return waitFor(
        async () => (await botNotes()).find((body) => body.includes(text)),
        20_000,
        `the bot's comment showing ${text}`,
      );
    }

    it('gets hookbot/config on its head and one comment with the plan on the seeded issues', async () => {
      await admin.branches.create(helpdesk, { branch_name: branch, ref: 'master' });
      const head = await commitFile(
        helpdesk,
        branch,
        `rules:
  - name: close-untriaged
    on: [issue.open]
    for: issues
    if:
      - labels: { all: [needs-triage] }
    do: [close]
  - name: support
    on: [issue.open, issue.update]
    for: issues
    do:
      - label: { add: [support] }
`,
        'Rules for the helpdesk',
      );
      const mr = await admin.mergeRequests.create(helpdesk, {
        source_branch: branch,
        target_branch: 'master',
        title: 'Helpdesk rules',
      });
      mrId = mr.id;
      expect((await configStatus(helpdesk, head)).status).toBe('success');
      const body = await commentShowing('would close 1 issue: #3');
      expect(body).toContain('**No problems.**');
      expect(body).toContain('would add label support to 3 issues: #1, #2, #3');
      expect(body).toContain(`head ${head.slice(0, 8)}`);
      expect(await botNotes()).toHaveLength(1);
    });

    it('after two more pushes (broken, then fixed): exactly one bot comment, updated in place each time', async () => {
      const broken = await commitFile(helpdesk, branch, MERGES, 'Try automerge');
      expect((await configStatus(helpdesk, broken, 'failed')).description).toContain(
        '7:9: action "merge" is not allowed in repository rules',
      );
      const withProblems = await commentShowing(`head ${broken.slice(0, 8)}`);
      expect(withProblems).toContain('**1 problem**');
      expect(withProblems).toContain('`7:9: action "merge" is not allowed in repository rules');
      expect(await botNotes()).toHaveLength(1);

      const fixed = await commitFile(helpdesk, branch, TRIAGE_V1, 'Just triage');
      expect((await configStatus(helpdesk, fixed, 'success')).status).toBe('success');
      const planned = await commentShowing(`head ${fixed.slice(0, 8)}`);
      expect(planned).toContain('would add label needs-triage to 2 issues: #1, #2');
      await sb.ctx.hooks.idle();
      await runtime.bot.pipeline.idle();
      expect(await botNotes()).toHaveLength(1);
    });
  });
});
