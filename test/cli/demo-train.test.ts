/**
 * `hookbot demo --train`, run as people run it (a process), with `--keep` so that the test can look
 * at what it left on the sandbox before stopping it: the narration says the conflict was caught (the
 * culprit out with its reason), the others landed and where the queue's page is; the test checks on
 * its own, with git, that every first-parent commit of master passes the simulated CI's check; after
 * Ctrl+C nothing is left in the temporary folder or the folder it was started in.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { passesCheck } from '../helpers/semantic-check.ts';
import { waitFor } from '../helpers/wait-for.ts';

const run = promisify(execFile);
const BIN = path.resolve('bin/hookbot.js');

/** Every first-parent commit of master passes the check, read with git from a clone. */
async function masterLine(gitUrl: string, dir: string): Promise<{ sha: string; passes: boolean }[]> {
  // The demo's bot user's personal access token (a demo token, printed in docs/sandbox.md).
  const auth = Buffer.from('hookbot:hookbot-demo-git-token').toString('base64');
  const git = (...args: string[]) =>
    run('git', ['-c', `http.extraHeader=Authorization: Basic ${auth}`, ...args], {
      cwd: dir,
      maxBuffer: 16 * 1024 * 1024,
    });
  await git('clone', '--quiet', '--bare', '--', gitUrl, 'shop.git');
  const bare = (...args: string[]) => git('--git-dir', path.join(dir, 'shop.git'), ...args);
  const shas = (await bare('rev-list', '--first-parent', 'master')).stdout.trim().split('\n');
  const line = [];
  for (const sha of shas) {
    const files = (await bare('ls-tree', '-r', '--name-only', sha)).stdout.trim().split('\n');
    const texts = await Promise.all(files.map(async (file) => (await bare('show', `${sha}:${file}`)).stdout));
    line.push({ sha, passes: passesCheck(texts) });
  }
  return line;
}

describe('hookbot demo --train', () => {
  it('narrates a train: the semantic conflict caught and its culprit out with the reason, the others landed, 0 broken commits on master, the page; nothing left behind', async () => {
    const temp = mkdtempSync(path.join(tmpdir(), 'hookbot-demo-train-test-tmp-'));
    const cwd = mkdtempSync(path.join(tmpdir(), 'hookbot-demo-train-test-cwd-'));
    const work = mkdtempSync(path.join(tmpdir(), 'hookbot-demo-train-test-git-'));
    try {
      const child = spawn(process.execPath, [BIN, 'demo', '--train', '--keep'], {
        cwd,
        env: { ...process.env, TMPDIR: temp, HOOKBOT_IN_DOCKER: '0', HOOKBOT_DEMO_LOG: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      await waitFor(
        () => (stdout.includes('Press Ctrl+C') || child.exitCode !== null ? true : undefined),
        150_000,
        'the demo to finish its story',
      ).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}\n${stdout}\n${stderr}`);
      });
      expect(stdout, stderr).toContain('All 4 steps happened as expected.');
      // Each merge request passed alone; the train caught the two that do not pass together.
      expect(stdout.match(/ci\/test passed on its own head/g)).toHaveLength(4);
      expect(stdout).toMatch(
        /ci\/test failed on car \d \(\w+\): (!\d \+ )+!3 do not pass together, though each passed alone/,
      );
      // The culprit out, with its reason, and the comment the bot posted on it.
      expect(stdout).toMatch(
        /!3 leaves the train: ci\/test failed on the train's car \w+ \(master at \w+ with [^)]*!3\)/,
      );
      expect(stdout).toContain(
        'the conflict is caught: !3 is out of the train, and the bot told alice on it:',
      );
      expect(stdout).toMatch(/"Removed from the default merge queue for `master`: ci\/test failed on/);
      // The others landed, each as the very commit a car tested.
      for (const iid of [1, 2, 4])
        expect(stdout).toMatch(new RegExp(`!${iid} ".+" is merged \\(landed by the train\\)`));
      expect(stdout).toContain('landed: !1 + !2 + !4; !3 stays open for alice to fix');
      expect(stdout).toMatch(/master fast-forwarded \w+ -> \w+: the very commit car \d tested/);
      expect(stdout).toMatch(
        /master's first-parent history: \d+ commits, each checked again by ci\/test's check: 0 broken/,
      );
      // The page, answering while the demo is kept running.
      const page = /The queue's page: (http:\S+)/.exec(stdout)?.[1];
      expect(page).toBeDefined();
      const answer = await fetch(page!);
      expect(answer.status).toBe(200);
      expect(await answer.text()).toContain('acme/shop');
      // Checked on our own: every first-parent commit of master passes the CI's check; the
      // three landed merge requests are in it.
      const api = /sandbox's API: (http:\S+)\/api\/v3/.exec(stdout)?.[1];
      expect(api).toBeDefined();
      const line = await masterLine(`${api}/acme/shop.git`, work);
      expect(line.filter((commit) => !commit.passes)).toEqual([]);
      expect(line.length).toBeGreaterThanOrEqual(INITIAL_COMMITS + 2);

      child.kill('SIGINT');
      expect(await exited).toBe(0);
      // Nothing left behind: its temporary folder (state, rules, git cache, the CI's builds) and
      // nothing in the folder it was started in (no data/, no git cache there).
      // (tsx, which compiles the sources for bin/hookbot.js, keeps its own cache there: `tsx-<uid>`.)
      expect(readdirSync(temp).filter((name) => !/^tsx-\d+$/.test(name))).toEqual([]);
      expect(readdirSync(cwd)).toEqual([]);
      // The bot's debug log of the whole run: the git token and the hook secret never appear.
      expect(stderr.length).toBeGreaterThan(1000);
      for (const secret of ['hookbot-demo-git-token', 'demo-hook-secret', 'hookbot-demo-token'])
        expect(stderr).not.toContain(secret);
    } finally {
      for (const dir of [temp, cwd, work]) rmSync(dir, { recursive: true, force: true });
    }
  }, 200_000);

  it('refuses --keep without --train, and --rules with it, saying so (exit 2)', async () => {
    await expect(run(process.execPath, [BIN, 'demo', '--keep'])).rejects.toMatchObject({
      code: 2,
      stderr: 'error: --keep goes with --train\n',
    });
    await expect(run(process.execPath, [BIN, 'demo', '--train', '--rules', 'rules'])).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--train plays with its own train rule'),
    });
  }, 60_000);
});

/** master's commits before the train: one per initial file. */
const INITIAL_COMMITS = 2;
