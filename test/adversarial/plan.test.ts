/**
 * The plan on a merge request that changes `.hookbot.yml`, played against a running bot over HTTP
 * (`startRuntime`, what `hookbot serve` runs) with the sandbox delivering its hooks (issue 28 item 3
 * and "Also", issue 29 item 2; docs/repository-rules.md).
 *
 * - A burst: a merge request opened and a CI's `pending` status within a millisecond are one
 *   evaluation; the review hears the open all the same (status and comment), every time.
 * - Outsiders read nothing: a non-member, a guest and a reporter each fork the public project
 *   trust/vault, write rules that render `{{ title }}` and `{{ description }}` into comments and
 *   test the description (a yes/no oracle), and open a merge request. Each plan shows exactly what
 *   its author may read: the public issue; for the guest also the confidential issue they wrote;
 *   for the reporter every confidential issue, never with its text. A reporter's merge request from
 *   a fork a non-member may push to shows what the non-member may read.
 * - A fork's pushes cost no more than four plans an hour on its merge request: the fifth push gets a
 *   comment that says the plan was not computed, and when it will be.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { addGroup, addIssueRecord, addProject, addUser } from '../../src/sandbox/factories.ts';
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
  let vault = 0;
  const people: Record<'bot' | 'ci' | 'dev' | 'outsider' | 'guest' | 'reporter', Person> = {} as never;

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
    for (const name of ['bot', 'ci', 'dev', 'outsider', 'guest', 'reporter'] as const)
      people[name] = person(`plan-${name}`);
    // The bot is a master of the group, not an administrator: it has no sudo.
    const group = addGroup(sb.ctx.db, {
      name: 'trust',
      owner_id: 1,
      members: [
        { user_id: people.bot.id, access_level: 40 },
        { user_id: people.ci.id, access_level: 30 },
        { user_id: people.dev.id, access_level: 30 },
        // The reporter reaches the projects through the group, the guest is a member of trust/vault.
        { user_id: people.reporter.id, access_level: 20 },
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
    addIssueRecord(sb.ctx.db, { project_id: app, title: 'An issue of app' });
    const vaultRec = await addProject(sb.ctx, {
      name: 'vault',
      namespace_id: group.id,
      creator_id: 1,
      visibility_level: 20,
      initialFiles: { 'README.md': '# vault\n' },
    });
    vault = vaultRec.id;
    sb.ctx.db.data.members.push({
      project_id: vault,
      user_id: people.guest.id,
      access_level: 10,
      created_at: sb.ctx.db.now(),
    });
    // #1 public; #2 confidential; #3 confidential, written by the guest (who may read it).
    addIssueRecord(sb.ctx.db, {
      project_id: vault,
      title: 'Public bug',
      description: 'the public text',
    });
    addIssueRecord(sb.ctx.db, {
      project_id: vault,
      title: 'SECRET-TITLE-two',
      description: 'SECRET-DESC-two',
      confidential: true,
    });
    addIssueRecord(sb.ctx.db, {
      project_id: vault,
      title: 'SECRET-TITLE-three',
      description: 'SECRET-DESC-three',
      author_id: people.guest.id,
      confidential: true,
    });
    sb.ctx.db.changed();

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
        log: createLogger({
          level: (process.env.PLAN_LOG as 'info' | undefined) ?? 'silent',
          format: 'json',
        }),
        metrics: createMetrics(),
      },
      { api: { url: sb.url, token: people.bot.token }, webhookSecret: SECRET, scheduler: false },
    );
    for (const id of [app, vault])
      await admin.hooks.create(id, {
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

  // The developer's merge requests below stay within the default plan limits (10 per author and 4
  // per merge request in an hour): 4 opened, then one opened and pushed to 3 times.
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
          expect(status.description).toBe('1 rule, no problems');
          const body = await commentOn(app, mr.id, `head ${head.slice(0, 8)}`);
          expect(body).toContain('**No problems.**');
          expect(await botNotes(app, mr.id)).toHaveLength(1);
        }
      },
      TEST_TIMEOUT,
    );

    it(
      'a push and its status within a millisecond (push, merge_request.update, status.changed): the new head is reviewed every time',
      async () => {
        const branch = 'burst-push';
        await people.dev.client.branches.create(app, { branch_name: branch, ref: 'master' });
        const rules = (round: number) =>
          `rules:\n  - name: pushed-${round}\n    on: [issue.update]\n    for: issues\n    do:\n      - label: { add: [pushed-${round}] }\n`;
        await people.dev.client.files.create(app, {
          file_path: FILE,
          branch_name: branch,
          content: rules(0),
          commit_message: 'Rules',
        });
        const mr = await people.dev.client.mergeRequests.create(app, {
          source_branch: branch,
          target_branch: 'master',
          title: 'Burst by push',
        });
        await commentOn(app, mr.id, 'would add label pushed-0');
        for (let round = 1; round <= 3; round++) {
          await people.dev.client.files.update(app, {
            file_path: FILE,
            branch_name: branch,
            content: rules(round),
            commit_message: `Rules, push ${round}`,
          });
          const head = (await admin.branches.get(app, branch)).commit.id;
          await people.ci.client.statuses.create(app, head, { state: 'pending', name: 'ci/build' });
          expect((await configStatus(app, head)).status, `push ${round}`).toBe('success');
          const body = await commentOn(app, mr.id, `head ${head.slice(0, 8)}`);
          expect(body).toContain(`would add label pushed-${round}`);
        }
        expect(await botNotes(app, mr.id)).toHaveLength(1);
      },
      TEST_TIMEOUT,
    );
  });

  describe('outsiders read nothing: a plan shows only what its author may read', () => {
    /** Comments with the title and the description, and a yes/no test of the description. */
    const LEAKY = `rules:
  - name: leak
    on: [issue.update]
    for: issues
    do:
      - comment: 'title={{ title }} description={{ description }}'
  - name: oracle
    on: [issue.update]
    for: issues
    if:
      - description: { contains: SECRET }
    do:
      - label: { add: [oracle] }
`;

    /** `who` forks trust/vault (or uses `fork`), writes the rules on `branch` and opens a merge request. */
    async function forkMergeRequest(who: Person, branch: string, fork?: number) {
      const source = fork ?? (await who.client.projects.fork(vault)).id;
      await who.client.branches.create(source, { branch_name: branch, ref: 'master' });
      await who.client.files.create(source, {
        file_path: FILE,
        branch_name: branch,
        content: LEAKY,
        commit_message: 'Helpful rules',
      });
      const head = (await admin.branches.get(source, branch)).commit.id;
      const mr = await who.client.mergeRequests.create(source, {
        source_branch: branch,
        target_branch: 'master',
        title: `Rules from ${who.username}`,
        target_project_id: vault,
      });
      expect(mr.project_id).toBe(vault);
      // The head is in the fork, where the bot (no member of it) may not post hookbot/config; the
      // comment on the merge request is the plan.
      const body = await commentOn(vault, mr.id, `head ${head.slice(0, 8)}`);
      expect(body).toContain('**No problems.**');
      // Nothing of a confidential issue's text, anywhere in what the bot wrote.
      expect(body).not.toContain('SECRET');
      return { body, source };
    }

    const lines = (body: string) => body.split('\n').filter((line) => line.startsWith('- '));

    it(
      'a non-member: the public issue only; no confidential issue is named, rendered or tested',
      async () => {
        const { body } = await forkMergeRequest(people.outsider, 'leak');
        expect(body).toContain(`that @${people.outsider.username} (not a member) may read`);
        expect(lines(body)).toEqual([
          '- would comment "title=Public bug description=the public text" on 1 issue: #1',
        ]);
      },
      TEST_TIMEOUT,
    );

    it(
      'a guest: the public issue, and the confidential issue they wrote, without its text',
      async () => {
        const { body } = await forkMergeRequest(people.guest, 'leak');
        expect(body).toContain(`that @${people.guest.username} (guest) may read`);
        expect(lines(body)).toEqual([
          '- would comment "title=Public bug description=the public text" on 1 issue: #1',
          '- would comment on 1 issue: #3 (the text is not shown: confidential)',
          '- would add label oracle to 1 issue: #3',
        ]);
      },
      TEST_TIMEOUT,
    );

    it(
      'a reporter (through the group): every confidential issue, never with its text',
      async () => {
        const { body } = await forkMergeRequest(people.reporter, 'leak');
        expect(body).toContain(`that @${people.reporter.username} (reporter) may read`);
        expect(lines(body)).toEqual([
          '- would comment "title=Public bug description=the public text" on 1 issue: #1',
          '- would comment on 2 issues: #2, #3 (the text is not shown: confidential)',
          '- would add label oracle to 2 issues: #2, #3',
        ]);
      },
      TEST_TIMEOUT,
    );

    it(
      'a non-member pushing again and again: four plans an hour for the merge request, then the comment says when',
      async () => {
        // The limits are the defaults (4 per merge request, 10 per author in an hour).
        const fork = (await admin.projects.get(`${people.outsider.username}/vault`)).id;
        const mine = [];
        for await (const one of admin.mergeRequests.list(vault, { state: 'opened' }))
          if (one.author.username === people.outsider.username) mine.push(one);
        expect(mine).toHaveLength(1);
        const bodies: string[] = [];
        // Its first plan was computed when it was opened; four more pushes.
        for (let push = 2; push <= 5; push++) {
          await people.outsider.client.files.update(fork, {
            file_path: FILE,
            branch_name: 'leak',
            content: `${LEAKY}# push ${push}\n`,
            commit_message: `Push ${push}`,
          });
          const head = (await admin.branches.get(fork, 'leak')).commit.id;
          bodies.push(await commentOn(vault, mine[0]!.id, `head ${head.slice(0, 8)}`));
        }
        for (const body of bodies.slice(0, 3)) expect(body).toContain('would comment "title=Public bug');
        const waiting = bodies[3]!;
        expect(waiting).not.toContain('would ');
        const until = /It will be computed at (\d{4}-\d\d-\d\d \d\d:\d\d) UTC/.exec(waiting);
        expect(waiting).toContain(
          'The plan was not computed: this merge request had 4 plans computed in the last hour',
        );
        expect(until, waiting).not.toBeNull();
        // About an hour after its first plan.
        expect(Date.parse(`${until![1]}:00Z`)).toBeGreaterThan(Date.now() + 50 * 60_000);
        expect(await botNotes(vault, mine[0]!.id)).toHaveLength(1);
      },
      TEST_TIMEOUT,
    );

    it(
      "a reporter's merge request from a fork a non-member may push to: what the non-member may read",
      async () => {
        const fork = (await admin.projects.get(`${people.outsider.username}/vault`)).id;
        // The non-member makes the reporter a developer of their fork, who opens the merge request.
        await people.outsider.client.members.add(fork, people.reporter.id, 30);
        const { body } = await forkMergeRequest(people.reporter, 'via-reporter', fork);
        expect(body).toContain(`@${people.reporter.username} (reporter)`);
        expect(body).toContain(`@${people.outsider.username} (not a member)`);
        expect(body).toContain('may all read');
        expect(lines(body)).toEqual([
          '- would comment "title=Public bug description=the public text" on 1 issue: #1',
        ]);
      },
      TEST_TIMEOUT,
    );
  });
});
