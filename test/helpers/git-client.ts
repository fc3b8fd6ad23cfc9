/**
 * The real git client against the sandbox's git over HTTP, as a developer would use it: clone,
 * commit, tag, push. Runs with a controlled environment (no system or user configuration) in a
 * home of its own.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface GitRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface GitClient {
  /** Runs git in `cwd` (relative to the client's home); rejects on a non-zero exit. */
  run(cwd: string, args: string[]): Promise<GitRun>;
  /** Clones `url` (credentials in it) into a new folder; its path. */
  clone(url: string): Promise<string>;
  /** Writes the files and commits them; the new head's sha. */
  commit(dir: string, files: Record<string, string | Buffer>, message: string): Promise<string>;
  close(): Promise<void>;
}

export async function gitClient(): Promise<GitClient> {
  const home = await mkdtemp(path.join(tmpdir(), 'hookbot-git-client-'));
  let n = 0;
  const run = (cwd: string, args: string[]): Promise<GitRun> =>
    new Promise((resolve, reject) => {
      execFile(
        'git',
        args,
        {
          cwd,
          maxBuffer: 64 * 1024 * 1024,
          env: {
            PATH: process.env.PATH ?? '/usr/bin:/bin',
            HOME: home,
            GIT_CONFIG_NOSYSTEM: '1',
            GIT_TERMINAL_PROMPT: '0',
            GIT_AUTHOR_NAME: 'Dev',
            GIT_AUTHOR_EMAIL: 'dev@example.com',
            GIT_COMMITTER_NAME: 'Dev',
            GIT_COMMITTER_EMAIL: 'dev@example.com',
            LC_ALL: 'C',
          },
        },
        (error, stdout, stderr) => {
          const result = {
            code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
            stdout,
            stderr,
          };
          if (result.code !== 0) reject(new Error(`git ${args.join(' ')}: ${stderr || stdout}`));
          else resolve(result);
        },
      );
    });
  return {
    run,
    async clone(url) {
      const dir = path.join(home, `clone-${++n}`);
      await run(home, ['clone', '--quiet', '--', url, dir]);
      return dir;
    },
    async commit(dir, files, message) {
      for (const [name, content] of Object.entries(files)) await writeFile(path.join(dir, name), content);
      await run(dir, ['add', '--', ...Object.keys(files)]);
      await run(dir, ['commit', '--quiet', '-m', message]);
      return (await run(dir, ['rev-parse', 'HEAD'])).stdout.trim();
    },
    close: () => rm(home, { recursive: true, force: true }),
  };
}
