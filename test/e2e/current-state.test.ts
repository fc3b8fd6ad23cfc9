/**
 * Decisions follow the item's current state, over real HTTP: the sandbox delivers its hooks to the
 * bot (`startRuntime`, as `hookbot serve` runs it), and the bot's API calls go through a proxy that
 * can fail them. One test per way the promise used to break:
 *
 * 1. an event followed quickly by another was folded away (an MR opened, its first status a moment later);
 * 2. a merge kept for retry was carried out after its rule stopped matching;
 * 3. a note's text and author were taken from the delivery (a forged Note Hook acted "as" anyone);
 * 4. a user could suppress a planned comment by pasting its marker, and a comment with `{{ title }}`
 *    was posted again on every title edit;
 * 6. a second event whose hook carried the same bytes as the first (v3 merge request hooks carry no
 *    labels and whole seconds) was taken for a redelivery and dropped.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import type { Decision } from '../../src/rules/item/process-item.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import type { RetryReport } from '../../src/scheduler/sweeps/retries.ts';
import { DEMO_TOKENS } from '../../src/sandbox/seed.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { openMergeRequest, postStatuses } from '../helpers/exec-world.ts';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'current-state-secret';

const RULES = `rules:
  - name: policy
    on: [merge_request.open, merge_request.update, push]
    if:
      - state: opened
    do:
      - status: { name: hookbot/policy, state: success, description: 'policy checked' }
  - name: automerge
    on: [merge_request.update, status.changed]
    if:
      - state: opened
      - labels: { any: [automerge], none: [do-not-merge] }
      - statuses: { required: [ci/test], state: success }
    do:
      - merge
  - name: command
    on: [note.created]
    if:
      - note: { matches: '^/hookbot triage' }
      - actor: { in: [alice] }
    do:
      - label: { add: [triaged] }
  - name: greet
    on: [issue.open, issue.update]
    if:
      - state: opened
    do:
      - comment: 'Thanks for "{{ title }}"'
`;

/** `Date.now` ahead by `offset` ms: the retry sweep then finds a backed-off action due. */
const realNow = Date.now.bind(Date);
function shiftClock(ms: number): void {
  const offset = Date.now() - realNow() + ms;
  Date.now = () => realNow() + offset;
}

describe('decisions follow the current state (over HTTP, the bot as it runs)', () => {
  let sb: Sandbox;
  let runtime: Runtime;
  let proxy: FaultProxy;
  let dir = '';
  let admin: Client;
  let alice: Client;
  let projectId = 0;
  let hookId = 0;
  let branches = 0;

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'current-root-token', hookTimeoutMs: 5_000 });
    proxy = await startFaultProxy(sb.url);
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-current-'));
    mkdirSync(path.join(dir, 'rules'));
    writeFileSync(path.join(dir, 'rules', 'default.yml'), RULES);
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: path.join(dir, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: path.join(dir, 'rules'),
        HOOKBOT_IN_DOCKER: '0',
      },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    // A window wide enough that an MR's open and its first status always land in one burst.
    config.pipeline.debounce_ms = 300;
    config.rules.watch = false;
    config.api.retry.limit = 0;
    runtime = await startRuntime(
      config,
      { log: createLogger({ level: 'silent', format: 'json' }), metrics: createMetrics() },
      { api: { url: proxy.url, token: DEMO_TOKENS.hookbot }, webhookSecret: SECRET, scheduler: false },
    );
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    alice = createClient({ baseUrl: sb.url, token: DEMO_TOKENS.alice });
    projectId = (await admin.projects.get('acme/web')).id;
    hookId = (await addHook()).id;
  });

  afterAll(async () => {
    Date.now = realNow;
    await runtime?.close();
    await proxy?.close();
    await sb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const addHook = () =>
    admin.hooks.create('acme/web', {
      url: runtime.bot.hookUrl,
      token: SECRET,
      issues_events: true,
      merge_requests_events: true,
      note_events: true,
      push_events: true,
      build_events: true,
    });

  const decisionOf = (kind: string, id: number) =>
    runtime.store.latestDecision(`${kind}:${projectId}:${id}`)?.decision as Decision | undefined;

  /**
   * An MR labelled automerge whose required status turns green while the merge call is refused
   * (503, never forwarded): the merge waits in the outbox for its retry.
   */
  async function mergeKeptForRetry(branch: string) {
    const mr = await openMergeRequest(admin, projectId, branch, { labels: ['automerge'] });
    proxy.fail({ method: 'PUT', path: /\/merge$/, mode: 'down', times: 1 });
    await postStatuses(admin, projectId, mr.sha, branch, { 'ci/test': 'success' });
    const held = await waitFor(
      () =>
        runtime.store
          .dueActions(Number.MAX_SAFE_INTEGER)
          .find((action) => action.itemKey === `merge_request:${projectId}:${mr.id}` && action.lastError),
      20_000,
      'the merge kept for retry',
    );
    return { mr, held };
  }

  async function statusNames(sha: string): Promise<string[]> {
    const names: string[] = [];
    for await (const status of admin.statuses.list(projectId, sha)) names.push(status.name);
    return names;
  }

  async function botNotes(issueId: number): Promise<string[]> {
    const bodies: string[] = [];
    for await (const note of admin.notes.listIssueNotes(projectId, issueId))
      if (note.author.username === 'hookbot') bodies.push(note.body);
    return bodies;
  }

  async function settle(): Promise<void> {
    // The sandbox delivers hooks in the background: wait until none is queued, then for the bot.
    await sb.ctx.hooks.idle();
    await runtime.bot.pipeline.idle();
  }

  it('1. an MR opened and its first pending status a moment later: the open still runs the rules that listen to it', async () => {
    for (let i = 0; i < 3; i++) {
      const branch = `burst-${++branches}`;
      const mr = await openMergeRequest(admin, projectId, branch, { statuses: { 'ci/test': 'pending' } });
      const names = await waitFor(
        async () =>
          (await statusNames(mr.sha)).includes('hookbot/policy') ? statusNames(mr.sha) : undefined,
        20_000,
        `hookbot/policy on ${branch}`,
      );
      expect(names).toContain('hookbot/policy');
      await settle();
    }
  });

  it('2. a merge kept for retry is withdrawn, not made, once the rule no longer matches', async () => {
    const { mr, held } = await mergeKeptForRetry(`retry-${++branches}`);
    await settle();

    // The label goes while the bot hears nothing of it (the hook is away): only the retry can tell.
    await admin.hooks.remove('acme/web', hookId);
    await admin.mergeRequests.update(projectId, mr.id, { labels: [] });
    hookId = (await addHook()).id;

    shiftClock(60 * 60_000);
    const retried = (await runtime.sweeps.run('retries')) as RetryReport;
    const call = retried.calls.find((one) => one.id === held.id);
    expect(call?.status).toBe('withdrawn');
    expect(call?.detail).toBe(
      'withdrawn: automerge no longer matches (labels include any of [automerge] and none of [do-not-merge] seen [])',
    );
    expect((await admin.mergeRequests.get(projectId, mr.id)).state).toBe('opened');
    expect(runtime.store.getAction(held.id)).toBeUndefined();
    expect(decisionOf('merge_request', mr.id)?.text).toContain('withdrawn: automerge no longer matches');
    // The status page says it too, in the decision of that merge request.
    const page = await (await fetch(`${runtime.bot.url}/status`)).text();
    expect(page).toContain('withdrawn: automerge no longer matches');
  });

  it('2b. a required status that failed during the backoff: the retried merge is withdrawn', async () => {
    const branch = `failed-${++branches}`;
    const { mr, held } = await mergeKeptForRetry(branch);
    await settle();
    await admin.hooks.remove('acme/web', hookId);
    await postStatuses(admin, projectId, mr.sha, branch, { 'ci/test': 'failed' });
    hookId = (await addHook()).id;

    shiftClock(60 * 60_000);
    const retried = (await runtime.sweeps.run('retries')) as RetryReport;
    expect(retried.calls.find((one) => one.id === held.id)).toMatchObject({
      status: 'withdrawn',
      detail: expect.stringMatching(/^withdrawn: automerge no longer matches \(statuses ci\/test/),
    });
    expect((await admin.mergeRequests.get(projectId, mr.id)).state).toBe('opened');
  });

  async function deliverNote(noteId: number, issueId: number, text: string, user: string): Promise<number> {
    const res = await fetch(runtime.bot.hookUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gitlab-event': 'Note Hook',
        'x-gitlab-token': SECRET,
      },
      body: JSON.stringify({
        object_kind: 'note',
        user: { name: user, username: user },
        project_id: projectId,
        object_attributes: {
          id: noteId,
          note: text,
          noteable_type: 'Issue',
          author_id: 2,
          noteable_id: issueId,
          project_id: projectId,
          created_at: '2026-11-25 10:00:00 UTC',
          system: false,
        },
        issue: { id: issueId },
      }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  it('3. a forged Note Hook acts for nobody: the note is read by its id from the server', async () => {
    const issue = await admin.issues.create(projectId, { title: 'A forged command' });
    await settle();
    // A note that does not exist, "by alice", with the command in it.
    expect(await deliverNote(999_999, issue.id, '/hookbot triage', 'alice')).toBe(202);
    // A real note by someone else, delivered with forged text and author.
    const real = await admin.notes.createIssueNote(projectId, issue.id, 'just a remark');
    await settle();
    expect(await deliverNote(real.id, issue.id, '/hookbot triage', 'alice')).toBe(202);
    await settle();
    expect((await admin.issues.get(projectId, issue.id)).labels).not.toContain('triaged');

    // The same command really written by alice: the server confirms text and author, and it acts.
    await alice.notes.createIssueNote(projectId, issue.id, '/hookbot triage');
    await waitFor(
      async () =>
        (await admin.issues.get(projectId, issue.id)).labels.includes('triaged') ? true : undefined,
      20_000,
      'the triaged label',
    );
  });

  it("4. a pasted marker does not suppress the bot's comment, and title edits do not repeat it", async () => {
    await admin.hooks.remove('acme/web', hookId);
    const issue = await admin.issues.create(projectId, { title: 'First title' });
    // Someone copies the marker the bot's comment would carry (it is derivable from the rules).
    const { templateMarker } = await import('../../src/rules/engine/comment-marker.ts');
    const marker = templateMarker('greet', 'Thanks for "{{ title }}"');
    await alice.notes.createIssueNote(projectId, issue.id, `me first ${marker.html}`);
    hookId = (await addHook()).id;
    await admin.issues.update(projectId, issue.id, { title: 'Edited title 1' });
    await waitFor(
      async () => ((await botNotes(issue.id)).length > 0 ? true : undefined),
      20_000,
      'the comment',
    );
    for (let i = 2; i <= 4; i++) {
      await admin.issues.update(projectId, issue.id, { title: `Edited title ${i}` });
      await settle();
    }
    const notes = await botNotes(issue.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain(marker.html);
  });

  it('6. the same bytes again after the item changed (one user, two edits in a second): the rules run again on the fresh state', async () => {
    // No hooks from the sandbox: the test sends the deliveries itself, byte for byte the same.
    await admin.hooks.remove('acme/web', hookId);
    const mr = await openMergeRequest(admin, projectId, `again-${++branches}`, {
      labels: ['automerge', 'do-not-merge'],
      statuses: { 'ci/test': 'success' },
    });
    const fixture = JSON.parse(
      readFileSync(new URL('../fixtures/hooks/merge_request.json', import.meta.url), 'utf8'),
    ) as { object_attributes: Record<string, unknown> };
    Object.assign(fixture.object_attributes, {
      id: mr.id,
      target_project_id: projectId,
      source_project_id: projectId,
      action: 'update',
    });
    const body = JSON.stringify(fixture);
    const deliver = async () => {
      const res = await fetch(runtime.bot.hookUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gitlab-event': 'Merge Request Hook',
          'x-gitlab-token': SECRET,
        },
        body,
      });
      return ((await res.json()) as { message: string }).message;
    };
    expect(await deliver()).toBe('accepted');
    await settle();
    expect(decisionOf('merge_request', mr.id)).toBeDefined();
    expect((await admin.mergeRequests.get(projectId, mr.id)).state).toBe('opened'); // do-not-merge
    // The label comes off; the server's hook for it would carry the same bytes as the first.
    await admin.mergeRequests.update(projectId, mr.id, { labels: ['automerge'] });
    expect(await deliver()).toBe('duplicate');
    await waitFor(
      async () => ((await admin.mergeRequests.get(projectId, mr.id)).state === 'merged' ? true : undefined),
      20_000,
      'the merge after the label came off',
    );
    hookId = (await addHook()).id;
  }, 60_000);

  it('5. rules reloaded without a rule: its pending actions are withdrawn', async () => {
    const branch = `removed-${++branches}`;
    const { mr, held } = await mergeKeptForRetry(branch);
    await settle();
    writeFileSync(
      path.join(dir, 'rules', 'default.yml'),
      RULES.replace(/ {2}- name: automerge[\s\S]*?- merge\n/, ''),
    );
    expect(await runtime.rules.reload()).toEqual([]);
    await waitFor(() => (runtime.store.getAction(held.id) ? undefined : true), 20_000, 'the withdrawal');
    shiftClock(60 * 60_000);
    await runtime.sweeps.run('retries');
    expect((await admin.mergeRequests.get(projectId, mr.id)).state).toBe('opened');
  });
});
