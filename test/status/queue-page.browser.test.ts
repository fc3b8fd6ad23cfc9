/**
 * The merge queues' page (`/status/queue`) of a RUNNING merge train, in headless Chromium at 1,400 px:
 * a bot as `hookbot serve` composes it, the sandbox delivering its hooks over HTTP, the sandbox's
 * simulated CI building every pushed commit. Merge requests are queued by labels (Merge Request
 * Hooks); the front car's build is held pending (its branch is held by the CI), so the train stays
 * running while the page is read: the cars behind it pass (or fail, with a broken merge request)
 * and wait for the car ahead. A second bot without git credentials shows a train that cannot move.
 * Screenshots are saved (their paths printed) for a person to look at.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import type { MergeRequest } from '../../src/api/merge-requests.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import type { QueuePageData } from '../../src/status/queue-data.ts';
import { INITIAL_FILES } from '../helpers/queue-world.ts';
import { startSimulatedCi, type SimulatedCi } from '../helpers/simulated-ci.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { SCREENSHOT, browser } from './browser.ts';

/* The browser globals the functions passed to `evaluate` use (they run in the page, not in Node). */
interface Rect {
  top: number;
  bottom: number;
  left: number;
  right: number;
}
interface DomNode {
  nodeType: number;
  textContent: string | null;
  childNodes: ArrayLike<DomNode>;
}
declare const document: {
  documentElement: { scrollWidth: number };
  createRange(): { selectNodeContents(node: DomNode): void; getClientRects(): ArrayLike<Rect> };
};
declare const window: { innerWidth: number };

const SECRET = 'queue-page-secret';
const BOT = { username: 'qp-bot', token: 'qp-bot-token-0123456789', password: 'qp-bot-password' };
const CI = { username: 'qp-ci', token: 'qp-ci-token-0123456789', password: 'qp-ci-password' };
/** A long queue name with `-` and `_`: the car branches are long, and must break only between words. */
const QUEUE = 'release-candidates_for-customers';
const LONG = 120_000;
const TEST_TIMEOUT = 300_000;
const WIDTH = 1400;
const shot = (name: string) => SCREENSHOT.replace(/\.png$/, `-${name}.png`);

const RULES = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { name: ${QUEUE}, statuses: [ci/test], status_timeout: 30m, depth: 3, batch: 2 }
`;

describe('the merge queues page of a running train, in headless Chromium at 1,400 px', () => {
  let sb: Sandbox;
  let ci: SimulatedCi;
  let admin: Client;
  let dir = '';
  let groupId = 0;
  const runtimes: Runtime[] = [];
  /** Train branches whose builds the CI holds pending (the front car's). */
  const held = new Set<string>();

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'qp-root-token', hookTimeoutMs: 10_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-queue-page-'));
    const bot = addUser(sb.ctx.db, {
      username: BOT.username,
      private_token: BOT.token,
      password: BOT.password,
    });
    const ciUser = addUser(sb.ctx.db, {
      username: CI.username,
      private_token: CI.token,
      password: CI.password,
    });
    groupId = addGroup(sb.ctx.db, {
      name: 'qp',
      owner_id: 1,
      members: [
        { user_id: bot.id, access_level: 40 },
        { user_id: ciUser.id, access_level: 30 },
      ],
    }).id;
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
    ci = startSimulatedCi(sb, {
      token: CI.token,
      git: { username: CI.username, password: CI.password },
      modeOf: (branch) => (held.has(branch) ? 'pending-forever' : 'normal'),
    });
  });

  afterAll(async () => {
    for (const runtime of runtimes) await runtime.close();
    await ci?.stop();
    await sb?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function startBot(name: string, git: { password: boolean }): Promise<Runtime> {
    const home = path.join(dir, name);
    mkdirSync(path.join(home, 'rules'), { recursive: true });
    writeFileSync(path.join(home, 'rules', 'default.yml'), RULES);
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: path.join(home, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: path.join(home, 'rules'),
        HOOKBOT_IN_DOCKER: '0',
        ...(git.password ? { HOOKBOT_GIT_PASSWORD: BOT.password } : {}),
      },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 50;
    config.rules.watch = false;
    config.git.cache_dir = path.join(home, 'git');
    for (const sweep of ['rules', 'merge_watch', 'reconcile', 'hook_check'] as const)
      config.scheduler.sweeps[sweep] = { enabled: false, every: '1h' };
    config.scheduler.sweeps.merge_queue = { enabled: true, every: '1h' };
    const runtime = await startRuntime(
      config,
      { log: createLogger({ level: 'silent', format: 'json' }), metrics: createMetrics() },
      { api: { url: sb.url, token: BOT.token }, webhookSecret: SECRET },
    );
    runtimes.push(runtime);
    return runtime;
  }

  async function project(name: string, runtime: Runtime) {
    const rec = await addProject(sb.ctx, {
      name,
      namespace_id: groupId,
      creator_id: 1,
      initialFiles: INITIAL_FILES,
    });
    await admin.branches.protect(rec.id, 'master');
    await admin.hooks.create(rec.id, {
      url: runtime.bot.hookUrl,
      token: SECRET,
      merge_requests_events: true,
      note_events: true,
      push_events: true,
      build_events: true,
    });
    return { id: rec.id, path: `qp/${rec.path}` };
  }

  async function openMergeRequest(projectId: number, branch: string, content: string, title: string) {
    await admin.branches.create(projectId, { branch_name: branch, ref: 'master' });
    const response = await fetch(`${sb.apiUrl}/projects/${projectId}/repository/files`, {
      method: 'POST',
      headers: { 'private-token': sb.adminToken, 'content-type': 'application/json' },
      body: JSON.stringify({
        file_path: `${branch}.txt`,
        branch_name: branch,
        content,
        commit_message: `${branch}: a file`,
      }),
    });
    if (!response.ok) throw new Error(`could not commit on ${branch}: ${response.status}`);
    return admin.mergeRequests.create(projectId, { source_branch: branch, target_branch: 'master', title });
  }

  const label = (projectId: number, mr: MergeRequest) =>
    admin.mergeRequests.update(projectId, mr.id, { labels: ['automerge'] });

  const active = (runtime: Runtime, projectId: number) =>
    runtime.store.queued().filter((entry) => entry.projectId === projectId && !entry.left);

  /** Every text node inside `selector`'s elements lies on one line (a break only between nodes: at a `<wbr>`). */
  async function brokenMidWord(page: Page, selector: string): Promise<string[]> {
    return page.locator(selector).evaluateAll((elements) => {
      const broken: string[] = [];
      for (const element of elements as unknown as DomNode[]) {
        for (const node of Array.from(element.childNodes)) {
          if (node.nodeType !== 3 || !node.textContent) continue;
          const range = document.createRange();
          range.selectNodeContents(node);
          const tops = new Set(Array.from(range.getClientRects()).map((rect) => Math.round(rect.top)));
          if (tops.size > 1) broken.push(node.textContent);
        }
      }
      return broken;
    });
  }

  it(
    'shows each car as one row with its members, its build, since when, its timeout and an estimate never in the past',
    async () => {
      const bot = await startBot('running', { password: true });
      const p = await project('web', bot);
      // a and b ride in car 1, held pending; the others pass behind it, except `bad` (it calls a
      // name nothing defines) and whatever rides with or behind it.
      const specs: [string, string, string][] = [
        ['alpha', 'calls: foo\n', 'Add the alpha report'],
        ['bravo', 'calls: foo\n', 'Speed up the bravo exporter'],
        ['charlie', 'calls: foo\n', 'Charlie: a longer title that says what the change does in a sentence'],
        ['delta', 'calls: foo\n', 'Delta fixes'],
        ['bad', 'calls: nowhere\n', 'Call a function that does not exist'],
        ['echo', 'calls: foo\n', 'Echo'],
        ['foxtrot', 'calls: foo\n', 'Foxtrot, waiting for a car'],
      ];
      const mrs: MergeRequest[] = [];
      for (const [branch, content, title] of specs)
        mrs.push(await openMergeRequest(p.id, branch, content, title));
      await ci.idle();
      held.add(`hookbot/train/master/${QUEUE}/${mrs[0]!.iid}`);
      // Labelled in order, each once the one before is queued (the queue's order is the labels' order).
      for (const mr of mrs) {
        await label(p.id, mr);
        await waitFor(
          () => (active(bot, p.id).some((e) => e.mrId === mr.id) ? true : undefined),
          LONG,
          `!${mr.iid} queued`,
        );
      }
      // The train runs: three cars pushed; every car behind the held front read passed or failed.
      await waitFor(
        () => {
          const cars = new Map(active(bot, p.id).flatMap((e) => (e.car ? [[e.car.id, e.car]] : [])));
          const all = [...cars.values()];
          const front = all.find((car) => held.has(car.branch));
          return all.length === 3 &&
            front?.pushedAt !== undefined &&
            all.every((car) => car === front || car.checked !== undefined)
            ? true
            : undefined;
        },
        LONG,
        'three cars pushed, those behind the front read',
      );

      const context = await (await browser()).newContext({ viewport: { width: WIDTH, height: 900 } });
      const page = await context.newPage();
      // The status page links to the queue page at its top, above the fold.
      expect((await page.goto(`${bot.bot.url}/status`))?.status()).toBe(200);
      const link = page.locator('header a[href="status/queue"]').first();
      expect(await link.isVisible()).toBe(true);
      expect((await link.boundingBox())!.y).toBeLessThan(200);
      await page.screenshot({ path: shot('status-top') });
      console.log(`status page screenshot (its top, with the link): ${shot('status-top')}`);
      await link.click();
      await page.waitForURL(/\/status\/queue$/);
      expect(await page.title()).toBe('hookbot merge queues');

      const section = page.locator('section.queue', { hasText: QUEUE });
      expect(await section.count()).toBe(1);
      const heading = await section.locator('h2').innerText();
      expect(heading).toContain(p.path);
      expect(heading).toContain('train · depth 3 · batch 2');
      // One row per car, numbered 1, 2, 3 as of now, each with its members as `group/project!iid`.
      const rows = section.locator('table').first().locator('tbody tr');
      expect(await rows.count()).toBe(3);
      const json = (await (await fetch(`${bot.bot.url}/status/queue.json`)).json()) as QueuePageData;
      const queue = json.queues.find((q) => q.queue === QUEUE)!;
      expect(queue.cars.map((c) => c.number)).toEqual([1, 2, 3]);
      const iidOf = new Map(mrs.map((mr, i) => [mr.iid, specs[i]![0]]));
      for (const [i, car] of queue.cars.entries()) {
        const text = await rows.nth(i).innerText();
        expect(text).toContain(`car ${car.number}`);
        for (const m of car.members) {
          expect(m.ref).toBe(`${p.path}!${m.iid}`);
          expect(text).toContain(m.ref);
          expect(text).toContain(specs.find(([branch]) => branch === iidOf.get(m.iid))![2]);
        }
        expect(car.members.length).toBeLessThanOrEqual(2);
      }
      // The front's build runs (held); the others passed and wait for the car ahead, or failed with `bad`.
      const [front, ...behind] = queue.cars;
      expect(front!.state).toBe('running');
      expect(front!.waitingFor).toEqual(['ci/test']);
      expect(await rows.nth(0).innerText()).toMatch(/running[\s\S]*waiting for ci\/test/);
      expect(await rows.nth(0).innerText()).toMatch(/\d+ min left/);
      const badIid = mrs[4]!.iid;
      let broken = false;
      for (const [i, car] of behind.entries()) {
        broken ||= car.members.some((m) => m.iid === badIid);
        expect(car.state).toBe(broken ? 'failed' : 'passed');
        expect(await rows.nth(i + 1).innerText()).toContain(broken ? 'failed' : 'passed');
      }
      expect(behind[0]!.state).toBe('passed');
      expect(await rows.nth(1).innerText()).toContain('waiting for the car ahead');
      // A passed car gave the queue its build time: estimates from the first round on, never past.
      expect(queue.buildMs).toBeGreaterThan(0);
      const estimates = [...queue.cars.map((c) => c.estimate), ...queue.waiting.map((w) => w.estimate)];
      for (const estimate of estimates)
        if (estimate.at !== undefined) expect(estimate.at).toBeGreaterThanOrEqual(json.now);
      expect(front!.estimate.kind).not.toBe('none');
      expect(await rows.nth(0).innerText()).toMatch(/any moment|in about/);
      // The merge requests not in a car, with their positions now.
      const riding = queue.cars.reduce((n, c) => n + c.members.length, 0);
      expect(queue.waiting.map((w) => w.member.position)).toEqual(
        Array.from({ length: mrs.length - riding }, (_, i) => riding + i + 1),
      );
      // Readable: no internal key, no branch name nor reference broken inside a word, nothing wider than the screen.
      const shown = await page.locator('body').innerText();
      expect(shown).not.toContain('merge_request:');
      expect(await page.locator('code.branch').count()).toBeGreaterThanOrEqual(4);
      expect(await brokenMidWord(page, 'code.branch')).toEqual([]);
      expect(await brokenMidWord(page, '.ref')).toEqual([]);
      const widths = await page.evaluate(() => ({
        page: document.documentElement.scrollWidth,
        screen: window.innerWidth,
      }));
      expect(widths.page).toBeLessThanOrEqual(widths.screen);
      await page.screenshot({ path: shot('train'), fullPage: true });
      expect(statSync(shot('train')).size).toBeGreaterThan(10_000);
      console.log(`queue page screenshot (running train): ${shot('train')}`);
      // On a phone: one labelled block per row, nothing wider than the screen, no word broken.
      await page.setViewportSize({ width: 360, height: 740 });
      const narrow = await page.evaluate(() => ({
        page: document.documentElement.scrollWidth,
        screen: window.innerWidth,
      }));
      expect(narrow.page).toBeLessThanOrEqual(narrow.screen);
      expect(await brokenMidWord(page, 'code.branch')).toEqual([]);
      await page.screenshot({ path: shot('train-phone'), fullPage: true });
      console.log(`queue page screenshot (running train, phone): ${shot('train-phone')}`);
      await context.close();
    },
    TEST_TIMEOUT,
  );

  it(
    'shows a train that cannot move (no git credentials) on its queue, first',
    async () => {
      const bot = await startBot('stuck', { password: false });
      const p = await project('api', bot);
      const mr = await openMergeRequest(
        p.id,
        'feature/login-form_v2',
        'calls: foo\n',
        'Login form, second take',
      );
      await ci.idle();
      await label(p.id, mr);
      await waitFor(
        () => (active(bot, p.id).some((e) => e.trouble !== undefined) ? true : undefined),
        LONG,
        'the trouble recorded',
      );
      const context = await (await browser()).newContext({ viewport: { width: WIDTH, height: 900 } });
      const page = await context.newPage();
      const status = await (await fetch(`${bot.bot.url}/status`)).text();
      expect(status.slice(0, status.indexOf('<main>'))).toContain('cannot move');
      expect((await page.goto(`${bot.bot.url}/status/queue`))?.status()).toBe(200);
      const alert = page.locator('section.queue .alert.trouble');
      expect(await alert.isVisible()).toBe(true);
      expect(await alert.innerText()).toContain('This queue cannot move');
      expect(await alert.innerText()).toContain('no git credentials');
      expect((await alert.boundingBox())!.y).toBeLessThan(400);
      expect(await page.locator('body').innerText()).not.toContain('merge_request:');
      await page.screenshot({ path: shot('stuck'), fullPage: true });
      console.log(`queue page screenshot (a train that cannot move): ${shot('stuck')}`);
      await context.close();
    },
    TEST_TIMEOUT,
  );
});
