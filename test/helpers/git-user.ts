/**
 * A person using git against the sandbox over HTTP, with their own username and password: a clone in
 * a folder of the caller's, commits, pushes (branches, tags). What a developer does at their desk,
 * with nothing of the bot's (the tests of who may push what play them).
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

export interface GitUser {
  /** The working tree. */
  dir: string;
  git(...args: string[]): Promise<string>;
  /** Writes `file` and commits it on the current branch; answers the new sha. */
  commit(file: string, content: string, message?: string): Promise<string>;
}

export async function gitUser(
  parent: string,
  who: { username: string; password: string; name?: string },
  url: string,
): Promise<GitUser> {
  const dir = path.join(parent, `${who.username}-${Math.random().toString(16).slice(2, 10)}`);
  await mkdir(dir, { recursive: true });
  const header = `Authorization: Basic ${Buffer.from(`${who.username}:${who.password}`).toString('base64')}`;
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: who.name ?? who.username,
    GIT_AUTHOR_EMAIL: `${who.username}@example.com`,
    GIT_COMMITTER_NAME: who.name ?? who.username,
    GIT_COMMITTER_EMAIL: `${who.username}@example.com`,
  };
  const git = async (...args: string[]): Promise<string> => {
    const { stdout } = await exec('git', ['-c', `http.extraHeader=${header}`, ...args], {
      cwd: dir,
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout.trim();
  };
  await git('clone', '--quiet', '--', url, '.');
  return {
    dir,
    git,
    async commit(file, content, message = `${file}`) {
      await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
      await writeFile(path.join(dir, file), content);
      await git('add', '--', file);
      await git('commit', '--quiet', '-m', message);
      return git('rev-parse', 'HEAD');
    },
  };
}
