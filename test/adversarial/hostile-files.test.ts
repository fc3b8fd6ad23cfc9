/**
 * Hostile repository files against a running bot (issue 28, items 1, 4 and 5), over real HTTP and
 * git: the sandbox delivers its hooks to the bot (`startRuntime`, as `hookbot serve` runs it), a
 * developer and a registered non-member push with the real git client, and the bot reads each
 * project's `.hookbot.yml` through the files API.
 *
 * - A developer's tag named like the default branch, holding planted rules: never read.
 * - A key bomb (32,800 keys within 256 KB) on a merge request: refused at once with the bound named;
 *   `/healthz` answers all along.
 * - A file with a thousand problems: the comment shows the first 50 and counts the rest.
 * - A non-member's fork merge request with a 6 MB `.hookbot.yml` beside a 5 MB change: the file is
 *   refused unread, the change never read whole, and the bot goes on with its other work.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { addUser } from '../../src/sandbox/factories.ts';
import { DEMO_TOKENS } from '../../src/sandbox/seed.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { gitClient, type GitClient } from '../helpers/git-client.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'hostile-files-secret';
const FILE = '.hookbot.yml';

/** The operator's rules: every new issue is labelled `seen` (a sign that the bot evaluated it). */
const CENTRAL = `rules:
  - name: seen
    on: [issue.open]
    for: issues
    do:
      - label: { add: [seen] }
`;

const labelRule = (name: string) => `rules:
  - name: ${name}
    on: [issue.open]
    for: issues
    do:
      - label: { add: [${name}] }
`;

/** The file of the report: ~32,800 keys in one mapping, 228 KB (under the 256 KB limit). */
const keyBomb = () => `${Array.from({ length: 32_800 }, (_, i) => `${i.toString(36)}: 1`).join('\n')}\n`;

/** 1,000 rules without an action: within every parse bound, a thousand problems. */
const thousandProblems = () =>
  `rules:\n${Array.from({ length: 1_000 }, (_, i) => `  - { name: r${i}, on: [issue.open] }`).join('\n')}\n`;

describe('hostile repository files against a running bot (over HTTP and git)', () => {
  let sb: Sandbox;
  let runtime: Runtime;
  let dir = '';
  let admin: Client;
  let git: GitClient;
  /** A user's clone URL with a personal access token. */
  let gitUrl: (user: string, project: string) => string;
  let web = 0;
  let helpdesk = 0;

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'hostile-root-token', hookTimeoutMs: 5_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-hostile-'));
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
    for (const project of [web, helpdesk])
      await admin.hooks.create(project, {
        url: runtime.bot.hookUrl,
        token: SECRET,
        issues_events: true,
        merge_requests_events: true,
        note_events: true,
        push_events: true,
        tag_push_events: true,
      });
    // alice: a developer of acme. mallory: registered, a member of nothing.
    const alice = sb.ctx.db.data.users.find((user) => user.username === 'alice')!;
    alice.personal_access_tokens = [...(alice.personal_access_tokens ?? []), 'alice-git-token'];
    addUser(sb.ctx.db, {
      username: 'mallory',
      name: 'Mallory Outsider',
      private_token: 'mallory-api-token',
      personal_access_tokens: ['mallory-git-token'],
    });
    git = await gitClient();
    gitUrl = (user, project) => {
      const url = new URL(`${sb.url}/${project}.git`);
      url.username = user;
      url.password = `${user}-git-token`;
      return url.toString();
    };
  });

  afterAll(async () => {
    await runtime?.close();
    await git?.close();
    await sb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Opens an issue and waits until the bot has labelled it `seen`; its labels then. */
  async function openIssue(project: number, title: string): Promise<string[]> {
    const issue = await admin.issues.create(project, { title });
    return waitFor(
      async () => {
        const labels = (await admin.issues.get(project, issue.id)).labels;
        return labels.includes('seen') ? labels : undefined;
      },
      20_000,
      `the bot's labels on "${title}"`,
    );
  }

  /** The latest `hookbot/config` status of a commit, once there is one. */
  async function configStatus(project: number, sha: string) {
    return waitFor(
      async () => {
        for await (const status of admin.statuses.list(project, sha))
          if (status.name === 'hookbot/config') return status;
        return undefined;
      },
      30_000,
      `hookbot/config on ${sha.slice(0, 8)}`,
    );
  }

  /** The bot's comment on a merge request, once there is one. */
  async function botComment(project: number, mrId: number): Promise<string> {
    return waitFor(
      async () => {
        for await (const note of admin.notes.listMergeRequestNotes(project, mrId))
          if (note.author.username === 'hookbot' && note.body.includes(FILE)) return note.body;
        return undefined;
      },
      30_000,
      'the bot comment',
    );
  }

  /** alice pushes a branch off master with `files`, and opens a merge request; its head and id. */
  async function aliceMergeRequest(branch: string, files: Record<string, string>) {
    const clone = await git.clone(gitUrl('alice', 'acme/web'));
    await git.run(clone, ['checkout', '--quiet', '-b', branch]);
    const head = await git.commit(clone, files, `Change ${FILE}`);
    await git.run(clone, ['push', '--quiet', 'origin', branch]);
    const mr = await createClient({ baseUrl: sb.url, token: DEMO_TOKENS.alice }).mergeRequests.create(web, {
      source_branch: branch,
      target_branch: 'master',
      title: `Change ${FILE} (${branch})`,
    });
    return { head, mr };
  }

  it("a developer's tag named like the default branch, holding planted rules, is never read", async () => {
    const clone = await git.clone(gitUrl('alice', 'acme/web'));
    await git.run(clone, ['checkout', '--quiet', '-b', 'planted']);
    await git.commit(clone, { [FILE]: labelRule('planted') }, 'Plant rules');
    await git.run(clone, ['tag', 'master']);
    await git.run(clone, ['push', '--quiet', 'origin', 'refs/tags/master:refs/tags/master']);
    // The next change of the real file makes the bot read it again: from the tag, by a bare name.
    await admin.files.create(web, {
      file_path: FILE,
      branch_name: 'master',
      content: labelRule('triage'),
      commit_message: `Add ${FILE}`,
    });
    const bare = await admin.files.get(web, FILE, 'master');
    expect(Buffer.from(bare.content, 'base64').toString('utf8')).toContain('planted');
    const head = (await admin.branches.get(web, 'master')).commit.id;
    expect((await configStatus(web, head)).description).toBe('1 rule in force');

    const labels = await openIssue(web, 'After the planted tag');
    expect(labels.sort()).toEqual(['seen', 'triage']);
  });

  it('a key bomb on a merge request is refused with the bound named, and /healthz answers all along', async () => {
    let polling = true;
    const answers: number[] = [];
    const poll = (async () => {
      while (polling) {
        // A stall of the event loop shows as a health check that does not answer in time.
        const response = await fetch(`${runtime.bot.url}/healthz`, { signal: AbortSignal.timeout(5_000) });
        answers.push(response.status);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    try {
      const { head, mr } = await aliceMergeRequest('bomb', { [FILE]: keyBomb() });
      const status = await configStatus(web, head);
      expect(status.status).toBe('failed');
      expect(status.description).toBe(
        '6667:6: more than 20,000 YAML tokens (keys, values, items), the limit of a rule file (a rule file holds rules, not data: split it, or move the data elsewhere)',
      );
      const comment = await botComment(web, mr.id);
      expect(comment).toContain('**1 problem**');
      expect(comment.length).toBeLessThan(2_000);
    } finally {
      polling = false;
      await poll;
    }
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.every((status) => status === 200)).toBe(true);
  });

  it('a file with a thousand problems: the comment shows the first 50 and counts the rest', async () => {
    const { head, mr } = await aliceMergeRequest('many-problems', { [FILE]: thousandProblems() });
    expect((await configStatus(web, head)).status).toBe('failed');
    const comment = await botComment(web, mr.id);
    const listed = comment.split('\n').filter((line) => line.startsWith('- `'));
    expect(listed).toHaveLength(51);
    expect(listed[50]).toContain('and 950 more problems (the first 50 are shown)');
    // The header counts every problem, the ones left out included (it said "51 problems").
    expect(comment).toContain('**1000 problems**');
    expect(comment.length).toBeLessThan(20_000);
  });

  // Pushing 11 MB over git and reading it back through the sandbox takes longer than the default
  // 20 s on a busy machine.
  it("a non-member's fork merge request with a 6 MB file beside a 5 MB change: refused unread; the bot goes on", async () => {
    const mallory = createClient({ baseUrl: sb.url, token: 'mallory-api-token' });
    const fork = await mallory.projects.fork(helpdesk);
    const clone = await git.clone(gitUrl('mallory', fork.path_with_namespace));
    await git.run(clone, ['checkout', '--quiet', '-b', 'huge']);
    const line = 'y'.repeat(99);
    const head = await git.commit(
      clone,
      {
        [FILE]: `rules: []\n${`# ${line}\n`.repeat(60_000)}`,
        'data.txt': `${line}\n`.repeat(50_000),
      },
      'A very large change',
    );
    await git.run(clone, ['push', '--quiet', 'origin', 'huge']);
    const mr = await mallory.mergeRequests.create(fork.id, {
      source_branch: 'huge',
      target_branch: 'master',
      target_project_id: helpdesk,
      title: 'A very large change',
    });
    // The comment on the merge request (the bot may not post a status in the outsider's fork).
    const comment = await botComment(helpdesk, mr.id);
    expect(comment).toContain(
      '`1:1: the file is over the 256 KB limit of a rule file (not read past it) (split it, or move what is not rules elsewhere)`',
    );
    expect(comment).toContain(head.slice(0, 8));
    // Still up, and still at work.
    expect((await fetch(`${runtime.bot.url}/healthz`)).status).toBe(200);
    expect(await openIssue(helpdesk, 'After the huge fork merge request')).toContain('seen');
  }, 120_000);
});
