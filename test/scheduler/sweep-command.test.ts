/**
 * `hookbot sweep --once` end to end: the real command line, a configuration file, a rules folder
 * and a state file, against the sandbox over HTTP.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { exited, holdStateInChild } from '../helpers/hold-state.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { issueAged, issueStates, makeWorld, type World, STALE_RULE } from './world.ts';

const sandbox = useSandbox();

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookbot-sweep-cli-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function configFor(world: World, breaker = { max_items: 50, max_share: 1 }): Promise<string> {
  const file = join(dir, 'hookbot.yml');
  await writeFile(
    file,
    [
      'api:',
      `  url: ${world.sb.url}`,
      `  token: ${world.bot.private_token}`,
      '  retry: { limit: 0 }',
      'webhook:',
      '  allow_open: true',
      'rules:',
      `  dir: ${world.rulesDir}`,
      'state:',
      `  path: ${join(dir, 'state', 'hookbot.json')}`,
      'hooks:',
      `  projects: [${world.path}]`,
      'scheduler:',
      `  breaker: { max_items: ${breaker.max_items}, max_share: ${breaker.max_share} }`,
      '',
    ].join('\n'),
  );
  return file;
}

async function sweep(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(['sweep', ...args], { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

const closed = async (world: World): Promise<number> =>
  [...(await issueStates(world)).values()].filter((state) => state === 'closed').length;

describe('hookbot sweep', () => {
  it('refuses to run without --once, and a project that is not namespace/project', async () => {
    expect(await sweep()).toMatchObject({
      code: 2,
      err: expect.stringContaining('only --once is supported'),
    });
    expect(await sweep('--once', '--project', 'web')).toMatchObject({
      code: 2,
      err: expect.stringContaining('--project must be namespace/project'),
    });
  });

  it('--dry-run shows the planned actions of every sweep and changes nothing', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'cli1', rules: STALE_RULE });
    await issueAged(world, 'stale one', 90);
    await issueAged(world, 'fresh one', 1);
    const config = await configFor(world);

    const result = await sweep('--once', '--dry-run', '--config', config);

    expect(result.code).toBe(0);
    expect(result.out).toContain('rules (dry run: nothing changed)');
    expect(result.out).toContain('"close stale issues" [daily]: 1 of 2 to act on, 1 planned');
    expect(result.out).toContain('dry-run: notes.createIssueNote');
    expect(result.out).toContain('dry-run: issues.update state_event="close"');
    for (const name of ['retries', 'merge_watch', 'reconcile', 'hook_check'])
      expect(result.out).toContain(name);
    expect(await closed(world)).toBe(0);
  });

  it('--rule runs that rule now and reports the actions taken', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'cli2', rules: STALE_RULE });
    await issueAged(world, 'stale one', 90);
    await issueAged(world, 'fresh one', 1);
    const config = await configFor(world);

    const result = await sweep('--once', '--rule', 'close stale issues', '--config', config);

    expect(result).toMatchObject({ code: 0, err: '' });
    expect(result.out).toContain('1 acted on');
    expect(result.out).toContain('done: issues.update state_event="close"');
    expect(result.out).not.toContain('merge_watch');
    expect(await closed(world)).toBe(1);
  });

  it('a tripped breaker exits 1 and says how to approve; --approve releases the rule', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'cli3', rules: STALE_RULE });
    for (let i = 0; i < 3; i++) await issueAged(world, `stale ${i}`, 90);
    const config = await configFor(world, { max_items: 2, max_share: 1 });

    const tripped = await sweep('--once', '--rule', 'close stale issues', '--config', config);
    expect(tripped.code).toBe(1);
    expect(tripped.out).toContain('circuit breaker tripped');
    expect(tripped.out).toContain('hookbot sweep --once --approve "close stale issues"');
    expect(await closed(world)).toBe(0);

    const preview = await sweep('--once', '--dry-run', '--approve', 'close stale issues', '--config', config);
    expect(preview.out).toContain('would be approved');
    expect(preview.out).toContain('3 planned');
    expect(await closed(world)).toBe(0);

    const approved = await sweep(
      '--once',
      '--approve',
      'close stale issues',
      '--rule',
      'close stale issues',
      '--config',
      config,
    );
    expect(approved.code).toBe(0);
    expect(approved.out).toContain('rule "close stale issues" approved');
    expect(await closed(world)).toBe(3);
  });

  it('the approval a dry run suggests, given before any trip, lets the run past the breaker and says so', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'cli6', rules: STALE_RULE });
    for (let i = 0; i < 3; i++) await issueAged(world, `stale ${i}`, 90);
    const config = await configFor(world, { max_items: 2, max_share: 1 });

    // The preview: it would trip, and says what to run.
    const preview = await sweep('--once', '--dry-run', '--rule', 'close stale issues', '--config', config);
    expect(preview.out).toContain(
      'rule "close stale issues" would be paused; approve with: hookbot sweep --once --approve "close stale issues"',
    );
    // The same with the approval, still a dry run: previewed as approved.
    const approvedPreview = await sweep(
      '--once',
      '--dry-run',
      '--approve',
      'close stale issues',
      '--rule',
      'close stale issues',
      '--config',
      config,
    );
    expect(approvedPreview.out).toContain(
      'rule "close stale issues" is not paused; it would be approved in advance (dry run: previewing as if it were)',
    );
    expect(approvedPreview.out).toContain('3 planned');
    expect(approvedPreview.out).not.toContain('circuit breaker tripped');
    expect(await closed(world)).toBe(0);

    // Exactly what the preview said to run: the rule is not paused yet, and the approval counts.
    const approved = await sweep('--once', '--approve', 'close stale issues', '--config', config);
    expect(approved.out).toContain(
      'rule "close stale issues" is not paused: its current definition is approved in advance, so the circuit breaker lets it past max_items and max_share',
    );
    expect(approved.out).not.toContain('nothing to approve');
    expect(approved.out).not.toContain('circuit breaker tripped');
    expect(approved.out).not.toContain('is paused');
    expect(await closed(world)).toBe(3);
  });

  it('refuses to run beside a running bot on the same state, and changes nothing', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'cli5', rules: STALE_RULE });
    await issueAged(world, 'stale one', 90);
    const config = await configFor(world);
    const bot = await holdStateInChild(join(dir, 'state', 'hookbot.json'));
    try {
      const result = await sweep('--once', '--config', config);
      expect(result.code).toBe(1);
      expect(result.err).toContain(
        `hookbot: state ${join(dir, 'state', 'hookbot.json.lock')}: in use by process ${bot.pid} on `,
      );
      expect(await closed(world)).toBe(0);
    } finally {
      bot.kill('SIGTERM');
      await exited(bot);
    }
    // Once that bot stopped, the same sweep runs.
    expect((await sweep('--once', '--config', config)).code).toBe(0);
    expect(await closed(world)).toBe(1);
  });

  it('names an unknown rule given to --approve or --rule', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'cli4', rules: STALE_RULE });
    const config = await configFor(world);

    expect(await sweep('--once', '--rule', 'close stale isues', '--config', config)).toMatchObject({
      code: 1,
      err: expect.stringContaining(
        `no scheduled rule named "close stale isues" in the rules of ${world.path}`,
      ),
    });
    const result = await sweep('--once', '--approve', 'no such rule', '--config', config);

    expect(result).toMatchObject({
      code: 1,
      err: expect.stringContaining('no scheduled rule named "no such rule"'),
    });
  });

  it('names a project the bot cannot see, with the closest one, once and without a stack trace', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'cli5', rules: STALE_RULE });
    const config = await configFor(world);
    // One letter swapped in the project's name.
    const [namespace = '', name = ''] = world.path.split('/');
    const typo = `${namespace}/${name.slice(0, -2)}${name.slice(-1)}${name.slice(-2, -1)}`;

    const result = await sweep('--once', '--project', typo, '--config', config);

    expect(result).toMatchObject({
      code: 1,
      out: '',
      err: `hookbot sweep: no project ${typo} that the bot's user can see (did you mean ${world.path}?)\n`,
    });
  });

  it('says the server refused the token, and which variable holds it', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'cli6', rules: STALE_RULE });
    const config = await configFor(world);
    const before = process.env.HOOKBOT_API_TOKEN;
    process.env.HOOKBOT_API_TOKEN = 'not-the-bot-token';
    try {
      const result = await sweep('--once', '--config', config);
      expect(result.code).toBe(1);
      expect(result.err).toContain(`the server at ${world.sb.url} refused the API token (401 on GET /user)`);
      expect(result.err).toContain('HOOKBOT_API_TOKEN');
      expect(result.err).not.toMatch(/\n\s+at /);
    } finally {
      if (before === undefined) delete process.env.HOOKBOT_API_TOKEN;
      else process.env.HOOKBOT_API_TOKEN = before;
    }
  });

  it('runs without a webhook secret, which it does not use', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'cli7', rules: STALE_RULE });
    const file = await configFor(world);
    const { readFile } = await import('node:fs/promises');
    const text = (await readFile(file, 'utf8')).replace('webhook:\n  allow_open: true\n', '');
    await writeFile(file, text);
    expect(text).not.toContain('webhook');

    expect(await sweep('--once', '--dry-run', '--config', file)).toMatchObject({ code: 0, err: '' });
  });
});
