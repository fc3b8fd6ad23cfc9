/**
 * What `serve` prints once it receives hooks (cli/hook-address.ts): where this process listens, the
 * URL the server must call, and the pid that takes signals.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { serveBanner } from '../../src/cli/hook-address.ts';
import { trainsInForce, trainWithoutGitLines } from '../../src/cli/train-warning.ts';

const base = { apiUrl: 'http://git.example', manageHooks: false, pid: 4242 };

describe('serve banner', () => {
  it('a replica listening on 3101 behind hooks.url on 3100: says both, and that the server calls hooks.url', () => {
    const text = serveBanner({
      ...base,
      hookUrl: 'http://127.0.0.1:3101/hooks',
      configuredHookUrl: 'http://bot.example:3100/hooks',
    });
    expect(text.split('\n')[0]).toBe(
      'hookbot: listening for hooks at http://127.0.0.1:3101/hooks (server http://git.example)',
    );
    expect(text).toContain(
      "  the server must call http://bot.example:3100/hooks (hooks.url, the URL in the projects' hooks), not the address above: it must lead to this process",
    );
    expect(text).toContain('  next: add http://bot.example:3100/hooks as a web hook of each project');
    expect(text).not.toContain('receiving hooks at http://bot.example:3100/hooks');
  });

  it('hooks.url written another way for the same address is one address', () => {
    const text = serveBanner({
      ...base,
      hookUrl: 'http://127.0.0.1:3100/hooks',
      configuredHookUrl: 'HTTP://127.0.0.1:3100/hooks/',
    });
    expect(text.split('\n')[0]).toBe(
      'hookbot: receiving hooks at HTTP://127.0.0.1:3100/hooks/ (server http://git.example)',
    );
    expect(text).not.toContain('must call');
  });

  it('prints the pid that reloads on HUP', () => {
    const text = serveBanner({ ...base, hookUrl: 'http://10.0.0.5:3000/hooks' });
    expect(text).toContain('  pid 4242: kill -HUP 4242 reloads the rules, kill 4242 stops the bot\n');
  });

  it('with hooks.manage, says the hook check installs the hooks to the URL the server calls', () => {
    const text = serveBanner({
      ...base,
      manageHooks: true,
      hookUrl: 'http://127.0.0.1:3101/hooks',
      configuredHookUrl: 'http://bot.example:3100/hooks',
    });
    expect(text).toContain(
      "adds and repairs the projects' hooks to http://bot.example:3100/hooks (hooks.manage)",
    );
  });
});

describe('serve banner: a merge train in force without git credentials (issue 37)', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-serve-banner-'));
  const queueRule = (name: string, queue: string) =>
    `  - name: ${name}\n    on: [merge_request.update]\n    for: merge_requests\n    do:\n      - queue: ${queue}\n`;
  const write = (name: string, text: string) => {
    mkdirSync(path.join(dir, name), { recursive: true });
    writeFileSync(path.join(dir, name, 'default.yml'), text);
    return path.join(dir, name);
  };
  const trains = write(
    'trains',
    `rules:\n${queueRule('serial', '{ statuses: [ci/test] }')}${queueRule('train', '{ statuses: [ci/test], name: fast, depth: 3 }')}`,
  );
  const serialOnly = write('serial', `rules:\n${queueRule('serial', '{ statuses: [ci/test] }')}`);
  const broken = write(
    'broken',
    `rules:\n${queueRule('train', '{ statuses: [ci/test], depth: 3, bogus: 1 }')}`,
  );
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('warns, naming the rule where it is written and what to configure', async () => {
    const warnings = trainWithoutGitLines(await trainsInForce(trains), {});
    const text = serveBanner({ ...base, hookUrl: 'http://10.0.0.5:3000/hooks', warnings });
    expect(text.trimEnd().split('\n').slice(-3)).toEqual([
      '  warning: no git credentials are configured, and the rules in force have a merge train: it cannot build or push a car, so nothing queued in it will land',
      `    ${path.join(trains, 'default.yml')}:11:9: rule "train" queues in "fast" with depth 3, batch 1`,
      "    configure the bot user's: git.password (HOOKBOT_GIT_PASSWORD, or git.password_file) with its password or a personal access token, or git.ssh_key_file (HOOKBOT_GIT_SSH_KEY_FILE); docs/merge-queue.md#git-credentials",
    ]);
  });

  it('says nothing with a password or an SSH key, with only serial queues, or with rules not in force', async () => {
    const found = await trainsInForce(trains);
    expect(trainWithoutGitLines(found, { password: 'token' })).toEqual([]);
    expect(trainWithoutGitLines(found, { ssh_key_file: '/keys/bot' })).toEqual([]);
    expect(trainWithoutGitLines(await trainsInForce(serialOnly), {})).toEqual([]);
    expect(trainWithoutGitLines(await trainsInForce(broken), {})).toEqual([]);
    expect(serveBanner({ ...base, hookUrl: 'http://10.0.0.5:3000/hooks' })).not.toContain('warning');
  });
});
