/**
 * The plan on a merge request that changes `.hookbot.yml`, played against a running bot over HTTP
 * (`startRuntime`, what `hookbot serve` runs) with the sandbox delivering its hooks (issue 28 item 3
 * and "Also", issue 29 item 2; docs/repository-rules.md).
 *
 * - A burst: a merge request opened and a CI's `pending` status within a millisecond are one
 *   evaluation; the review hears the open all the same (status and comment), every time.
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

const SECRET = 'adversarial-plan-secret';
const FILE = '.hookbot.yml';
/** Generous: a busy 2-core machine runs the sandbox, the bot and the test at once. */
const LONG = 60_000;
const TEST_TIMEOUT = 240_000;

interface Person {
  username: string;
  token: string;
  id: number;
  client: Client;
}

describe('the plan of a merge request that changes .hookbot.yml (a running bot, over HTTP)', () => {
  let sb: Sandbox;
  let runtime: Runtime;
  let dir = '';
  let admin: Client;
  let app = 0;
  const people: Record<'bot' | 'ci' | 'dev', Person> = {} as never;

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'adversarial-plan-root', hookTimeoutMs: 10_000 });
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
    const person = (username: string): Person => {
      const token = `${username}-token-0123456789`;
      const user = addUser(sb.ctx.db, { username, private_token: token });
      return {
        username,
        token,
        id: user.id,
        client: createClient({ baseUrl: sb.url, token, retry: { limit: 0 } }),
      };
    };
    for (const name of ['bot', 'ci', 'dev'] as const) people[name] = person(`plan-${name}`);
    // The bot is a master of the group, not an administrator: it has no sudo.
    const group = addGroup(sb.ctx.db, {
      name: 'trust',
      owner_id: 1,
      members: [
        { user_id: people.bot.id, access_level: 40 },
        { user_id: people.ci.id, access_level: 30 },
        { user_id: people.dev.id, access_level: 30 },
      ],
    });
    const project = await addProject(sb.ctx, {
      name: 'app',
      namespace_id: group.id,
      creator_id: 1,
      visibility_level: 20,
      initialFiles: { 'README.md': '# app\n' },
    });
    app = project.id;

    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-adversarial-plan-'));
    mkdirSync(path.join(dir, 'rules'));
    writeFileSync(path.join(dir, 'rules', 'default.yml'), 'rules: []\n');
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
    // The pipeline's debounce stays at its default (250 ms), as users run it: a burst within that
    // window is one evaluation, which is what the burst test needs.
    config.rules.watch = false;
    runtime = await startRuntime(
      config,
      {
        log: createLogger({ level: (process.env.PLAN_LOG as 'info' | undefined) ?? 'silent', format: 'json' }),
        metrics: createMetrics(),
      },
      { api: { url: sb.url, token: people.bot.token }, webhookSecret: SECRET, scheduler: false },
    );
    await admin.hooks.create(app, {
      url: runtime.bot.hookUrl,
      token: SECRET,
      issues_events: true,
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

  /** The latest `hookbot/config` status of a commit, once there is one. */
  async function configStatus(project: number, sha: string) {
    return waitFor(
      async () => {
        for await (const status of admin.statuses.list(project, sha))
          if (status.name === 'hookbot/config') return status;
        return undefined;
      },
      LONG,
      `hookbot/config on ${sha.slice(0, 8)}`,
    );
  }

  /** The bot's notes on a merge request (by the server's author). */
  async function botNotes(project: number, mrId: number): Promise<string[]> {
    const bodies: string[] = [];
    for await (const note of admin.notes.listMergeRequestNotes(project, mrId))
      if (note.author.username === people.bot.username) bodies.push(note.body);
    return bodies;
  }

  const commentOn = (project: number, mrId: number, showing: string) =>
    waitFor(
      async () => (await botNotes(project, mrId)).find((body) => body.includes(showing)),
      LONG,
      `the bot's comment on the merge request showing "${showing}"`,
    );

  describe('a burst: the merge request opened and a status within a millisecond', () => {
    it(
      'is reviewed every time (hookbot/config on the head, one comment with the plan)',
      async () => {
        for (let round = 1; round <= 4; round++) {
          const branch = `burst-${round}`;
          await people.dev.client.branches.create(app, { branch_name: branch, ref: 'master' });
          await people.dev.client.files.create(app, {
            file_path: FILE,
            branch_name: branch,
            content: `rules:\n  - name: burst-${round}\n    on: [issue.update]\n    for: issues\n    do:\n      - label: { add: [burst-${round}] }\n`,
            commit_message: `Rules, round ${round}`,
          });
          const head = (await admin.branches.get(app, branch)).commit.id;
          const mr = await people.dev.client.mergeRequests.create(app, {
            source_branch: branch,
            target_branch: 'master',
            title: `Burst ${round}`,
          });
          // The CI reports at once, as most do on every push.
          await people.ci.client.statuses.create(app, head, { state: 'pending', name: 'ci/build' });
          const status = await configStatus(app, head);
          expect(status.status, `round ${round}`).toBe('success');
          expect(status.description).toBe('1 rules, no problems');
          const body = await commentOn(app, mr.id, `head ${head.slice(0, 8)}`);
          expect(body).toContain('**No problems.**');
          expect(await botNotes(app, mr.id)).toHaveLength(1);
        }
      },
      TEST_TIMEOUT,
    );
  });
});
