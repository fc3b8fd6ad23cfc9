import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { main, packageVersion } from '../../src/cli/main.ts';

function capture() {
  const io = {
    outText: '',
    errText: '',
    out: (t: string) => void (io.outText += t),
    err: (t: string) => void (io.errText += t),
  };
  return io;
}

describe('hookbot command line', () => {
  it('prints its version', async () => {
    const io = capture();
    expect(await main(['--version'], io)).toBe(0);
    expect(io.outText.trim()).toBe(packageVersion());
  });

  it('runs as `npx hookbot` in a clone, where nothing put hookbot on the PATH (package.json bin)', async () => {
    const { stdout } = await promisify(execFile)('npx', ['--offline', 'hookbot', '--version'], {
      cwd: new URL('../..', import.meta.url).pathname,
    });
    expect(stdout.trim()).toBe(packageVersion());
  }, 60_000);

  it('prints help naming itself', async () => {
    const io = capture();
    expect(await main(['--help'], io)).toBe(0);
    expect(io.outText).toContain('Usage: hookbot');
  });

  it('exits 2 with a clear message on an unknown subcommand', async () => {
    const io = capture();
    expect(await main(['frobnicate'], io)).toBe(2);
    expect(io.errText).toContain("unknown command 'frobnicate'");
    expect(io.errText).not.toContain('did you mean');
  });

  it.each([
    ['strat', 'start'],
    ['stat', 'state'],
    ['chek', 'check'],
    ['sandbx', 'sandbox'],
  ])("suggests the command closest to '%s'", async (typed, meant) => {
    const io = capture();
    expect(await main([typed], io)).toBe(2);
    expect(io.errText).toBe(
      `hookbot: unknown command '${typed}' (did you mean '${meant}'?). Run 'hookbot --help' to see the commands.\n`,
    );
  });

  it.each([
    [['chekc', 'rules'], 'check'],
    [['chekc', 'rules', '--strict'], 'check'],
    [['sandbx', '--port', '4000'], 'sandbox'],
    [['simulat', 'acme/web', 'issue', '4'], 'simulate'],
  ])('a misspelt command followed by arguments (%j) gets the same did-you-mean', async (argv, meant) => {
    const io = capture();
    expect(await main(argv, io)).toBe(2);
    expect(io.errText).toBe(
      `hookbot: unknown command '${argv[0]}' (did you mean '${meant}'?). Run 'hookbot --help' to see the commands.\n`,
    );
  });

  it('an unknown word followed by arguments is an unknown command, without a guess', async () => {
    const io = capture();
    expect(await main(['frobnicate', 'x', '--y'], io)).toBe(2);
    expect(io.errText).toBe(
      "hookbot: unknown command 'frobnicate'. Run 'hookbot --help' to see the commands.\n",
    );
  });

  it('exits 2 on an unknown option', async () => {
    const io = capture();
    expect(await main(['--frobnicate'], io)).toBe(2);
    expect(io.errText).toContain("unknown option '--frobnicate'");
    expect(io.errText).not.toContain('unknown command');
  });

  it('works as an installed binary', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['bin/hookbot.js', '--version']);
    expect(stdout.trim()).toBe(packageVersion());
    const failure = await promisify(execFile)(process.execPath, ['bin/hookbot.js', 'nope']).catch(
      (e: unknown) => e,
    );
    expect(failure).toMatchObject({ code: 2 });
  });

  describe('a misspelt HOOKBOT_* variable is said by every command, once, with the closest name', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-main-env-'));
    const typo =
      'hookbot: HOOKBOT_DATABSE_URL is set but hookbot reads no such variable (did you mean HOOKBOT_DATABASE_URL?); it is ignored\n';
    it.each([
      // What the issue saw: explain read the state file in silence.
      ['explain', ['explain', 'acme/web', 'issue', '4', '--state', path.join(dir, 'none.json')]],
      ['check', ['check', path.join(dir, 'no-rules')]],
      ['schema', ['schema']],
      ['sweep', ['sweep', '--once', '--config', path.join(dir, 'missing.yml')]],
      ['plan', ['plan', '--config', path.join(dir, 'missing.yml')]],
      ['state', ['state', 'migrate', '--to', 'file', '--config', path.join(dir, 'missing.yml')]],
      ['--version', ['--version']],
    ])('%s', async (_name, argv) => {
      const io = capture();
      await main(argv, io, { HOOKBOT_DATABSE_URL: 'postgres://db/hookbot' });
      expect(io.errText.split(typo).length - 1).toBe(1);
      expect(io.errText.startsWith(typo)).toBe(true);
    });

    it('nothing is said when every HOOKBOT_* variable is one hookbot reads', async () => {
      const io = capture();
      await main(['schema'], io, { HOOKBOT_DATABASE_URL: 'postgres://db/hookbot', HOOKBOT_BOT_URL: 'x' });
      expect(io.errText).toBe('');
    });
  });
});
