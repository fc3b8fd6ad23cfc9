/**
 * What `serve` prints once it receives hooks (cli/hook-address.ts): where this process listens, the
 * URL the server must call, and the pid that takes signals.
 */
import { describe, expect, it } from 'vitest';
import { serveBanner } from '../../src/cli/hook-address.ts';

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
