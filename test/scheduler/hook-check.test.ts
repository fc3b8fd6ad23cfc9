/**
 * The hook check against the sandbox: hookbot's hook (told apart by its URL) must exist with the
 * events the rules need; it is reported when missing or changed, and created or repaired, with
 * the configured secret, when hooks.manage is on.
 */
import { describe, expect, it } from 'vitest';
import type { HookCheckReport } from '../../src/scheduler/sweeps/hook-check.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { makeWorld, wire, type World } from './world.ts';

const sandbox = useSandbox();

const HOOK_URL = 'http://hookbot.example.test/hooks';
const SECRET = 'hook-check-secret';

const NOTE_RULE = `
rules:
  - name: thank reporters
    on: [issue.open]
    do: [ { comment: "Thanks!" } ]
`;

const STATUS_RULE = `
rules:
  - name: merge when green
    on: [merge_request.update, status.changed]
    if: [ { statuses: { required: [ci/build], state: success } } ]
    do: [ merge ]
`;

const QUEUE_RULE = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    if: [ { labels: { any: [automerge] } } ]
    do: [ { queue: { statuses: [ci/test] } } ]
`;

function hooksOf(world: World) {
  return world.sb.ctx.db.data.hooks.filter((hook) => hook.project_id === world.project.id);
}

async function check(world: World, manage: boolean, dryRun = false): Promise<HookCheckReport> {
  world.settings.hooks = { url: HOOK_URL, manage, token: SECRET };
  return (await wire(world, { dryRun }).sweeps.run('hook_check')) as HookCheckReport;
}

describe('hook check', () => {
  it('reports a missing hook, and with manage creates it with every event needed and the secret', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'hooks1', rules: NOTE_RULE });

    expect((await check(world, false)).projects).toMatchObject([{ project: world.path, state: 'missing' }]);
    expect((await check(world, true, true)).projects).toMatchObject([{ state: 'would-create' }]);
    expect(hooksOf(world)).toEqual([]);

    const created = await check(world, true);
    expect(created.projects).toMatchObject([{ state: 'created' }]);
    expect(hooksOf(world)).toMatchObject([
      {
        url: HOOK_URL,
        token: SECRET,
        push_events: true,
        issues_events: true,
        merge_requests_events: true,
        note_events: true,
        build_events: false,
        pipeline_events: false,
      },
    ]);
    expect((await check(world, true)).projects).toMatchObject([{ state: 'ok' }]);
  });

  it('reports a hook someone changed, and with manage repairs it', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'hooks2', rules: NOTE_RULE });
    const hook = await world.admin.hooks.create(world.project.id, {
      url: HOOK_URL,
      push_events: true,
      issues_events: true,
      merge_requests_events: false,
      note_events: false,
    });

    const changed = await check(world, false);
    expect(changed.projects).toMatchObject([
      { state: 'changed', hookId: hook.id, missingEvents: ['merge_requests_events', 'note_events'] },
    ]);

    const repaired = await check(world, true);
    expect(repaired.projects).toMatchObject([{ state: 'repaired', hookId: hook.id }]);
    expect(hooksOf(world)).toMatchObject([
      { id: hook.id, merge_requests_events: true, note_events: true, token: SECRET },
    ]);
  });

  it('asks for build and pipeline events when a rule listens to status changes', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'hooks3', rules: STATUS_RULE });
    await world.admin.hooks.create(world.project.id, {
      url: HOOK_URL,
      push_events: true,
      issues_events: true,
      merge_requests_events: true,
      note_events: true,
    });

    const report = await check(world, false);

    expect(report.projects).toMatchObject([
      { state: 'changed', missingEvents: ['build_events', 'pipeline_events'] },
    ]);
  });

  it('asks for build and pipeline events when a rule queues merge requests (status hooks wake the queue)', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'hooks6', rules: QUEUE_RULE });
    await world.admin.hooks.create(world.project.id, {
      url: HOOK_URL,
      push_events: true,
      issues_events: true,
      merge_requests_events: true,
      note_events: true,
    });

    const report = await check(world, false);

    expect(report.projects).toMatchObject([
      { state: 'changed', missingEvents: ['build_events', 'pipeline_events'] },
    ]);
  });

  it('leaves other hooks alone and counts duplicates of its own', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'hooks4', rules: NOTE_RULE });
    await world.admin.hooks.create(world.project.id, {
      url: 'http://ci.example.test/hook',
      push_events: true,
    });
    const all = { push_events: true, issues_events: true, merge_requests_events: true, note_events: true };
    await world.admin.hooks.create(world.project.id, { url: HOOK_URL, ...all });
    await world.admin.hooks.create(world.project.id, { url: `${HOOK_URL}/`, ...all });
    // The same address written another way: host in capitals, the default port written out.
    await world.admin.hooks.create(world.project.id, { url: 'http://HookBot.example.test:80/hooks', ...all });

    const report = await check(world, true);

    expect(report.projects).toMatchObject([{ state: 'ok', duplicates: 2 }]);
    expect(hooksOf(world)).toHaveLength(4);
  });

  it('says it cannot check without hooks.url', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'hooks5', rules: NOTE_RULE });

    const report = (await world.sweeps.run('hook_check')) as HookCheckReport;

    expect(report.problem).toContain('hooks.url is not set');
    expect(report.projects).toEqual([]);
  });
});
