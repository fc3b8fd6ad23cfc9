/**
 * One item, one run at a time, over real HTTP (issue 29): the sandbox delivers its hooks to the bot
 * (`startRuntime`, as `hookbot serve` runs it), and the bot's API calls go through a proxy that
 * holds the first read of the merge request until the test lets it go. While the hook's run of
 * the merge request is held there, more events arrive for it and a sweep (reconciliation) takes it
 * up too. Before, the sweep read and merged it beside the held run, which then withdrew the same
 * merge as "no longer matches (state is opened seen merged)", and explain showed that withdrawal.
 *
 * The probe is the proxy (which reads of the merge request arrived while the first was held) and
 * the item-run log lines (`item run waits for the run in progress`), never the time.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DestinationStream } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import type { Decision } from '../../src/rules/item/process-item.ts';
import { DEMO_TOKENS } from '../../src/sandbox/seed.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { openMergeRequest, postStatuses } from '../helpers/exec-world.ts';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'one-run-secret';

const RULES = `rules:
  - name: merge when green
    on: [merge_request.open, merge_request.update, status.changed]
    if:
      - state: opened
      - labels: { any: [automerge] }
      - statuses: { required: [ci/test], state: success }
    do:
      - merge
`;

type Line = Record<string, unknown> & { msg: string };

describe('one run per item: concurrent deliveries and a sweep (over HTTP, the bot as it runs)', () => {
  let sb: Sandbox;
  let runtime: Runtime;
  let proxy: FaultProxy;
  let dir = '';
  let admin: Client;
  let projectId = 0;
  const lines: Line[] = [];

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'one-run-root-token', hookTimeoutMs: 5_000 });
    proxy = await startFaultProxy(sb.url);
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-one-run-'));
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
    // Short, so the test is quick; the events under test arrive while a run is held, not in a window.
    config.pipeline.debounce_ms = 20;
    config.rules.watch = false;
    const destination: DestinationStream = {
      write: (line: string) => void lines.push(JSON.parse(line) as Line),
    };
    runtime = await startRuntime(
      config,
      // Debug: the item-run lines are the probe.
      { log: createLogger({ level: 'debug', format: 'json', destination }), metrics: createMetrics() },
      { api: { url: proxy.url, token: DEMO_TOKENS.hookbot }, webhookSecret: SECRET, scheduler: false },
    );
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    projectId = (await admin.projects.get('acme/web')).id;
    await admin.hooks.create('acme/web', {
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
    await proxy?.close();
    await sb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Hooks sent and every run they caused finished. */
  async function settled(): Promise<void> {
    await sb.ctx.hooks.idle();
    await runtime.bot.pipeline.idle();
  }

  it('runs a merge request once at a time; explain shows the run that merged it', async () => {
    const mr = await openMergeRequest(admin, projectId, 'one-run', {
      labels: ['automerge'],
      statuses: { 'ci/test': 'running' },
    });
    const itemKey = `merge_request:${projectId}:${mr.id}`;
    await waitFor(() => runtime.store.latestDecision(itemKey), 20_000, 'the first evaluation');
    await settled();

    // The next read of the merge request is held until released.
    const read = new RegExp(`/projects/${projectId}/merge_requests/${mr.id}$`);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let heldNow = false;
    proxy.fail({
      method: 'GET',
      path: read,
      before: async () => {
        heldNow = true;
        await held;
        heldNow = false;
      },
    });
    const readsBefore = proxy.arrived('GET', read);

    // Two deliveries a few milliseconds apart: the status turns green, the merge request is edited.
    await postStatuses(admin, projectId, mr.sha, 'one-run', { 'ci/test': 'success' });
    await admin.mergeRequests.update(projectId, mr.id, { description: 'ready' });
    await waitFor(() => (heldNow ? true : undefined), 20_000, 'the hook run to read the merge request');

    // And a sweep that evaluates the same merge request, while the hook's run is held mid-way.
    const sweep = runtime.sweeps.run('reconcile');
    const waits = () =>
      lines.some((line) => line.msg === 'item run waits for the run in progress' && line.item === itemKey);
    // Either the sweep reads the merge request beside the held run (two runs at once) or it waits.
    await waitFor(
      () => (proxy.arrived('GET', read) > readsBefore + 1 || waits() ? true : undefined),
      20_000,
      'the sweep to read the merge request or to wait for the run in progress',
    );
    const readsWhileHeld = proxy.arrived('GET', read) - readsBefore;
    release();
    await sweep;
    await settled();

    // Nothing read the merge request while its first run was held: the sweep waited for that run.
    expect(readsWhileHeld).toBe(1);
    expect(waits()).toBe(true);
    expect((await admin.mergeRequests.get(projectId, mr.id)).state).toBe('merged');

    // Explain: the decision that merged it, not a later one that found it merged. Every evaluation
    // is kept (issue 30); the one that merged it as one that acted, which later ones do not hide.
    const kept = await runtime.store.keptDecisions(itemKey);
    const merging = kept.find((record) => record.acted);
    const decision = merging?.decision as Decision;
    const merge = decision.execution.calls.find((call) => call.op === 'mergeRequests.merge');
    expect(merge?.status).toBe('done');
    const iid = (await admin.mergeRequests.get(projectId, mr.id)).iid;
    const explain = await (await fetch(`${runtime.bot.url}/explain/acme%2Fweb/mr/${iid}`)).text();
    expect(explain).toContain('✓ merge when green');
    expect(explain).toMatch(/done: mergeRequests\.merge .*merged at/);
    expect(explain).not.toContain('withdrawn');
    // A later run did find it merged, and did nothing: it is the latest evaluation, kept after it.
    const later = kept.slice(0, kept.indexOf(merging!));
    expect(later.length).toBeGreaterThan(0);
    for (const record of later) {
      const found = record.decision as Decision;
      expect(record.acted).toBeUndefined();
      expect(found.evaluation.item.state).toBe('merged');
      expect(found.execution.calls).toEqual([]);
    }
    expect(explain).toContain(`why it acted: 1 action`);
  });
});
