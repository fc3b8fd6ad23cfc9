/**
 * The repository rules layer on its own, against the sandbox over HTTP: the repository's file never
 * stands between a project and its central rules (a file the bot cannot read leaves them alone; a
 * server that is away is thrown, so the item is tried again), and a name the central rules take
 * after the file was accepted is theirs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, createClient } from '../../../src/api/index.ts';
import { compileRules, type CompiledRuleSet } from '../../../src/rules/engine/compile.ts';
import { repositoryPolicy } from '../../../src/rules/repository/allow-list.ts';
import { createRepositoryRules } from '../../../src/rules/repository/repository-rules.ts';
import { DEMO_TOKENS } from '../../../src/sandbox/seed.ts';
import { startSandbox, type Sandbox } from '../../../src/sandbox/server.ts';
import { startFaultProxy, type FaultProxy } from '../../helpers/fault-proxy.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const central = (name: string): CompiledRuleSet =>
  compileRules([{ rules: [{ name, on: ['issue.open'], do: ['close'] }] as never }]);

describe('repository rules: the file never stands between a project and its central rules', () => {
  let sb: Sandbox;
  let proxy: FaultProxy;

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'repository-layer-root' });
    proxy = await startFaultProxy(sb.url);
    const admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    await admin.files.create('acme/web', {
      file_path: '.hookbot.yml',
      branch_name: 'master',
      content:
        'rules:\n  - name: triage\n    on: [issue.open]\n    do:\n      - label: { add: [needs-triage] }\n',
      commit_message: 'Add .hookbot.yml',
    });
  });
  afterAll(async () => {
    await proxy?.close();
    await sb?.close();
  });

  function layer(
    token: string,
    centralSet: () => CompiledRuleSet,
    options: { budget?: { items: number }; maxAgeMs?: number } = {},
  ) {
    const rules = createRepositoryRules({
      central: { forProject: () => centralSet() },
      policy: repositoryPolicy([]),
      ...options,
    });
    const client = createClient({ baseUrl: proxy.url, token, retry: { limit: 0 } });
    rules.attach({ client, bot: { username: 'hookbot' }, planClient: () => client });
    return rules;
  }

  it('takes the file after the central rules, and shows it in its state', async () => {
    const rules = layer(DEMO_TOKENS.hookbot, () => central('seen'));
    await rules.prepare('acme/web');
    expect(rules.forProject('acme/web').rules.map((rule) => rule.name)).toEqual(['seen', 'triage']);
    expect(rules.state()).toEqual([
      expect.objectContaining({ project: 'acme/web', rules: 1, problems: [], blobId: expect.any(String) }),
    ]);
  });

  it('a file the bot may not read: logged, the central rules alone, and the item goes on', async () => {
    // A token the server refuses (401): not a passing condition, so not worth a retry.
    const rules = layer('no-such-token', () => central('seen'));
    await expect(rules.prepare('acme/web')).resolves.toBeUndefined();
    expect(rules.forProject('acme/web').rules.map((rule) => rule.name)).toEqual(['seen']);
  });

  it('a server that is away: thrown as retryable (the item is tried again), then read once it is back', async () => {
    const rules = layer(DEMO_TOKENS.hookbot, () => central('seen'));
    proxy.fail({ method: 'GET', path: /\/repository\/files$/, mode: 'down' });
    const failure = await rules.prepare('acme/web').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiError);
    expect((failure as ApiError).retryable).toBe(true);
    await rules.prepare('acme/web');
    expect(rules.forProject('acme/web').rules.map((rule) => rule.name)).toEqual(['seen', 'triage']);
  });

  it('a read older than maxAgeMs is made again before the next item (replicas never see the push)', async () => {
    const admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    const fresh = layer(DEMO_TOKENS.hookbot, () => central('seen'), { maxAgeMs: 0 });
    const cached = layer(DEMO_TOKENS.hookbot, () => central('seen'));
    const changes: string[] = [];
    fresh.onChange((project) => changes.push(project));
    expect(fresh.known('acme/web')).toBe(false);
    await fresh.prepare('acme/web');
    await cached.prepare('acme/web');
    expect(fresh.known('ACME/Web')).toBe(true);
    expect(changes).toEqual([]);
    const text = (await admin.files.get('acme/web', '.hookbot.yml', 'master')).content;
    await admin.files.update('acme/web', {
      file_path: '.hookbot.yml',
      branch_name: 'master',
      content: 'rules:\n  - name: renamed\n    on: [issue.open]\n    do: [close]\n',
      commit_message: 'Rename the rule',
    });
    await fresh.prepare('acme/web');
    await cached.prepare('acme/web');
    expect(fresh.forProject('acme/web').rules.map((rule) => rule.name)).toEqual(['seen', 'renamed']);
    // Its rules in force changed: listeners withdraw the pending actions of rules that are gone.
    expect(changes).toEqual(['acme/web']);
    expect(cached.forProject('acme/web').rules.map((rule) => rule.name)).toEqual(['seen', 'triage']);
    await admin.files.update('acme/web', {
      file_path: '.hookbot.yml',
      branch_name: 'master',
      content: Buffer.from(text, 'base64').toString('utf8'),
      commit_message: 'Back to triage',
    });
  });

  it('a name the central rules take after the file was accepted is theirs', async () => {
    let set = central('seen');
    const rules = layer(DEMO_TOKENS.hookbot, () => set);
    await rules.prepare('acme/web');
    set = central('triage');
    expect(rules.forProject('acme/web').rules.map((rule) => rule.name)).toEqual(['triage']);
    expect(rules.forProject('acme/web').rules[0]!.actions[0]!.name).toBe('close');
  });

  it('the comment on a merge request says when the plan reached its budget, and a head is reviewed once', async () => {
    const admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    await admin.branches.create('acme/web', { branch_name: 'budget', ref: 'master' });
    await admin.files.update('acme/web', {
      file_path: '.hookbot.yml',
      branch_name: 'budget',
      content:
        'rules:\n  - name: triage\n    on: [issue.open]\n    do:\n      - label: { add: [triage-v2] }\n',
      commit_message: 'Another label',
    });
    const mr = await admin.mergeRequests.create('acme/web', {
      source_branch: 'budget',
      target_branch: 'master',
      title: 'Another label',
    });
    const rules = layer(DEMO_TOKENS.hookbot, () => central('seen'), { budget: { items: 1 } });
    const item = { type: 'merge_request' as const, projectId: mr.project_id, id: mr.id };
    const notes = async () => {
      const found = [];
      for await (const note of admin.notes.listMergeRequestNotes('acme/web', mr.id)) found.push(note);
      return found;
    };
    // The bot's own comment fires Note Hook: a note trigger starts no review.
    await rules.reviewMergeRequest(item, [{ kind: 'note', byBot: true, noteId: 1 }]);
    expect(await notes()).toEqual([]);

    await rules.reviewMergeRequest(item, [{ kind: 'merge_request', action: 'open', byBot: false }]);
    const [comment, ...others] = await notes();
    expect(others).toEqual([]);
    expect(comment!.author.username).toBe('hookbot');
    expect(comment!.body).not.toContain('changes no rules until');
    expect(comment!.body).toMatch(
      /budget reached: 1 of \d+ open items evaluated \(at most 1\); the plan covers those only/,
    );

    await rules.reviewMergeRequest(item, [{ kind: 'push', byBot: false }]);
    const again = await notes();
    expect(again).toHaveLength(1);
    expect(again[0]!.updated_at).toBe(comment!.updated_at);
  });

  it('a merge request past its plans for the hour: the comment and the status say when, and the plan is computed then', async () => {
    const admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    await admin.branches.create('acme/web', { branch_name: 'limited', ref: 'master' });
    const commit = async (label: string) => {
      await admin.files.update('acme/web', {
        file_path: '.hookbot.yml',
        branch_name: 'limited',
        content: `rules:\n  - name: triage\n    on: [issue.open]\n    do:\n      - label: { add: [${label}] }\n`,
        commit_message: `Label ${label}`,
      });
      return (await admin.branches.get('acme/web', 'limited')).commit.id;
    };
    await commit('limited-1');
    const mr = await admin.mergeRequests.create('acme/web', {
      source_branch: 'limited',
      target_branch: 'master',
      title: 'Limited',
    });
    // One plan per merge request in a window of 1.5 s instead of an hour: the test waits for the
    // window to pass rather than for an hour.
    const rules = createRepositoryRules({
      central: { forProject: () => central('seen') },
      policy: repositoryPolicy([]),
      planLimits: { perAuthor: 10, perMergeRequest: 1, windowMs: 1500 },
      // The timed review is a run of the item, like a hook's (here: counted).
      runItem: async (runFor, work) => {
        itemRuns.push(`${runFor.type}:${runFor.projectId}:${runFor.id}`);
        await work();
      },
    });
    const itemRuns: string[] = [];
    const client = createClient({ baseUrl: sb.url, token: DEMO_TOKENS.hookbot, retry: { limit: 0 } });
    const planClient = createClient({ baseUrl: sb.url, token: DEMO_TOKENS.hookbot, retry: { limit: 0 } });
    rules.attach({ client, bot: { username: 'hookbot' }, planClient: () => planClient });
    const item = { type: 'merge_request' as const, projectId: mr.project_id, id: mr.id };
    const comment = async () => {
      for await (const note of admin.notes.listMergeRequestNotes('acme/web', mr.id))
        if (note.author.username === 'hookbot') return note.body;
      return undefined;
    };
    try {
      await rules.reviewMergeRequest(item, [{ kind: 'merge_request', action: 'open', byBot: false }]);
      expect(await comment()).toContain('would add label limited-1');
      const calls = planClient.http.stats.calls;

      const second = await commit('limited-2');
      await rules.reviewMergeRequest(item, [{ kind: 'push', byBot: false }]);
      const waiting = (await comment())!;
      expect(waiting).toContain(`head ${second.slice(0, 8)}`);
      expect(waiting).toMatch(
        /\*\*No problems\.\*\* The plan was not computed: this merge request had 1 plan computed in the last hour \(at most 1 per merge request, rules\.repository\.plan_per_merge_request_hour\)\. It will be computed at \d{4}-\d\d-\d\d \d\d:\d\d UTC, and this comment updated then\./,
      );
      expect(planClient.http.stats.calls, 'no plan call while it waits').toBe(calls);
      const statuses = [];
      for await (const status of admin.statuses.list('acme/web', second)) statuses.push(status);
      expect(statuses.map((status) => status.description)).toEqual([
        expect.stringMatching(
          /^1 rule, no problems; the plan waits until .* UTC \(this merge request had 1 plan/,
        ),
      ]);

      // Once the window has passed, the bot computes the plan by itself and updates the comment.
      const planned = await waitFor(
        async () => {
          const body = await comment();
          return body?.includes('would add label limited-2') ? body : undefined;
        },
        20_000,
        'the plan computed once the window passed',
      );
      expect(planned).toContain(`head ${second.slice(0, 8)}`);
      expect(planned).not.toContain('was not computed');
      expect(itemRuns).toEqual([`merge_request:${mr.project_id}:${mr.id}`]);
    } finally {
      rules.close();
    }
  });
});
