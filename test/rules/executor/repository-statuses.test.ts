/**
 * A status the bot posts for a rule of a project's own `.hookbot.yml` (docs/repository-rules.md#statuses),
 * against the sandbox over HTTP: the executor marks its description, whatever the rule wrote; with
 * `rules.status_authors` set it satisfies no requirement, through every reader (the snapshot that
 * conditions, merges and the merge watch read, and the merge queue's and the train's reads of the
 * required statuses on a head or a car), while the executor still finds it and posts it once.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../../src/api/client.ts';
import { statusTrust } from '../../../src/api/statuses.ts';
import { ruleSet, type CompiledRuleSet } from '../../../src/rules/engine/compile.ts';
import { createExecutor } from '../../../src/rules/executor/executor.ts';
import { repositoryPolicy } from '../../../src/rules/repository/allow-list.ts';
import { checkRepositoryFile } from '../../../src/rules/repository/repository-file.ts';
import { bucketsAt, requiredBuckets } from '../../../src/scheduler/sweeps/head-statuses.ts';
import { createMemoryStore } from '../../../src/state/memory-store.ts';
import { evaluateItem, makeExecWorld, openMergeRequest, type ExecWorld } from '../../helpers/exec-world.ts';
import { useSandbox } from '../../helpers/sandbox.ts';
import { rulesFrom } from '../support.ts';

const ctx = useSandbox();
let world: ExecWorld;
/** The bot's client as `rules.status_authors: [root]` makes it: root plays the CI. */
let bot: Client;

beforeAll(() => {
  world = makeExecWorld(ctx().sb, 'repost');
  bot = createClient({
    baseUrl: ctx().sb.url,
    token: world.botToken,
    retry: { limit: 3, baseDelayMs: 5, maxDelayMs: 20 },
    statusTrust: statusTrust(['root'], () => world.botUser.username)!,
  });
});

/** A project's `.hookbot.yml`, checked as the bot checks it (its rules carry `repository: true`). */
function repositoryRules(text: string): CompiledRuleSet {
  const checked = checkRepositoryFile(text, {
    file: 'repost/web:.hookbot.yml',
    policy: repositoryPolicy([]),
  });
  expect(checked.problems).toEqual([]);
  return ruleSet(checked.rules!);
}

/** The operator's merge rule: it needs ci/test green. */
const CENTRAL = rulesFrom(`rules:
  - name: ship
    on: [merge_request.update]
    for: merge_requests
    if:
      - statuses: { required: [ci/test], state: success }
    do: [merge]
`);

const SELF_APPROVE = `rules:
  - name: self-approve
    on: [merge_request.update]
    for: merge_requests
    do:
      - status: { name: ci/test, state: success, description: 'tests passed' }
`;

async function openStore() {
  const store = createMemoryStore();
  await store.open();
  return store;
}

async function rows(projectId: number, sha: string) {
  const all = [];
  for await (const status of world.admin.statuses.list(projectId, sha, { all: true }))
    all.push({ name: status.name, description: status.description, author: status.author?.username });
  return all;
}

describe("a repository rule's status", () => {
  it('is marked by the executor and posted once; with a trust it satisfies nothing, until the CI posts', async () => {
    const project = await world.newProject('marked');
    const mr = await openMergeRequest(world.admin, project.id, 'feature');
    const rules = repositoryRules(SELF_APPROVE);
    const executor = createExecutor({ client: bot, store: await openStore(), random: () => 0.5 });
    const first = await evaluateItem(bot, rules, 'merge_request', project.id, mr.id);
    expect(
      (await executor.execute(first.evaluation, first.snapshot)).calls.map((call) => call.status),
    ).toEqual(['done']);
    expect(await rows(project.id, mr.sha)).toEqual([
      { name: 'ci/test', description: '[.hookbot.yml] tests passed', author: world.botUser.username },
    ]);

    // The trusted reader does not see it: the rule plans it again, and the executor finds it standing.
    const second = await evaluateItem(bot, rules, 'merge_request', project.id, mr.id);
    expect(second.snapshot.kind === 'merge_request' && second.snapshot.statuses).toEqual([]);
    expect(
      (await executor.execute(second.evaluation, second.snapshot)).calls.map((call) => call.status),
    ).toEqual(['skipped']);
    expect(await rows(project.id, mr.sha)).toHaveLength(1);

    // Every reader of a requirement: the operator's merge rule, the merge queue's head, a train's car.
    const central = await evaluateItem(bot, CENTRAL, 'merge_request', project.id, mr.id);
    expect(central.evaluation.plan).toEqual([]);
    expect(central.evaluation.rules[0]!.matched).toBe(false);
    const read = await bot.mergeRequests.get(project.id, mr.id);
    expect(await requiredBuckets(bot, read, mr.sha, ['ci/test'])).toEqual({ 'ci/test': 'missing' });
    expect(await bucketsAt(bot, project.id, mr.sha, ['ci/test'])).toEqual({ 'ci/test': 'missing' });

    // The CI's own word counts.
    await world.admin.statuses.create(project.id, mr.sha, {
      state: 'success',
      name: 'ci/test',
      ref: 'feature',
    });
    const green = await evaluateItem(bot, CENTRAL, 'merge_request', project.id, mr.id);
    expect(green.evaluation.plan.map((call) => call.call.op)).toEqual(['mergeRequests.merge']);
    expect(await bucketsAt(bot, project.id, mr.sha, ['ci/test'])).toEqual({ 'ci/test': 'passed' });
  });

  it('no text of the rule leaves the mark out: an empty description, or one that copies the mark, is marked all the same', async () => {
    const project = await world.newProject('unfakeable');
    const mr = await openMergeRequest(world.admin, project.id, 'feature');
    const rules = repositoryRules(`rules:
  - name: bare
    on: [merge_request.update]
    for: merge_requests
    do:
      - status: { name: ci/test, state: success }
      - status: { name: ci/build, state: success, description: '[.hookbot.yml]' }
      - status: { name: ci/lint, state: success, description: '{{ title }}' }
`);
    const executor = createExecutor({ client: bot, store: await openStore(), random: () => 0.5 });
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'merge_request', project.id, mr.id);
    await executor.execute(evaluation, snapshot);
    expect((await rows(project.id, mr.sha)).map((row) => [row.name, row.description]).sort()).toEqual([
      ['ci/build', '[.hookbot.yml] [.hookbot.yml]'],
      ['ci/lint', '[.hookbot.yml] Merge feature'],
      ['ci/test', '[.hookbot.yml]'],
    ]);
    expect(
      await requiredBuckets(bot, await bot.mergeRequests.get(project.id, mr.id), mr.sha, [
        'ci/test',
        'ci/build',
        'ci/lint',
      ]),
    ).toEqual({ 'ci/test': 'missing', 'ci/build': 'missing', 'ci/lint': 'missing' });
  });
});
