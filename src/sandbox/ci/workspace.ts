/**
 * Where the simulated CI gets the code it builds, as a runner does: over git HTTP at the project's
 * clone URL, with its own user's credentials (sent as an `Authorization` header through git's
 * configuration in the environment, never on a command line), into a bare cache repository per
 * project; then each build gets a fresh folder holding exactly the files of its commit (no `.git`, no
 * remote, no credentials: the script sees the tree and nothing else).
 *
 * A commit is fetched by its sha (git's protocol v2 serves any commit the repository holds, so a
 * branch pushed over since still builds). Fetches into one cache run one at a time. Folders are
 * removed when the build is done; the caches when the CI stops.
 *
 * When builds run as another user (`buildsAs`, build-user.ts: `nobody` under a root sandbox), that
 * user gets its own build folder (the commit's files, a home and a temporary folder: handed over to
 * it whole) and nothing else: the CI's folder lets it pass but not list, and the caches (every
 * project the CI built, private ones included) stay the CI's own (0700).
 */
import { execFile } from 'node:child_process';
import { chmod, lchown, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { BuildUser } from './build-user.ts';

const FULL_SHA = /^[0-9a-f]{40}$/;

interface Run {
  code: number;
  stderr: string;
}

export interface Workspace {
  /** A new folder with the files of `sha` of the project at `cloneUrl`. Throws when it cannot be had. */
  checkout(project: { id: number; cloneUrl: string }, sha: string): Promise<string>;
  /** Removes a folder `checkout` made. */
  release(dir: string): Promise<void>;
  /** Removes everything (caches included). */
  close(): Promise<void>;
}

export async function createWorkspace(
  root: string,
  credentials: { username: string; password: string },
  options: { buildsAs?: BuildUser } = {},
): Promise<Workspace> {
  const { buildsAs } = options;
  await mkdir(root, { recursive: true, mode: 0o700 });
  const work = await mkdtemp(path.join(root, 'hookbot-sandbox-ci-'));
  const cacheDir = path.join(work, 'caches');
  await mkdir(cacheDir, { mode: 0o700 });
  if (buildsAs) {
    await reachableBy(buildsAs, path.dirname(work));
    // The build user may pass through to its own folder, not list the others or the caches.
    await chmod(work, 0o711);
  }
  const authorization = `Authorization: Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;

  function git(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
    return new Promise((resolve) => {
      execFile(
        'git',
        args,
        {
          env: {
            PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
            HOME: work,
            LC_ALL: 'C',
            GIT_CONFIG_NOSYSTEM: '1',
            GIT_CONFIG_GLOBAL: '/dev/null',
            GIT_TERMINAL_PROMPT: '0',
            GIT_CONFIG_COUNT: '2',
            GIT_CONFIG_KEY_0: 'gc.auto',
            GIT_CONFIG_VALUE_0: '0',
            GIT_CONFIG_KEY_1: 'protocol.version',
            GIT_CONFIG_VALUE_1: '2',
            ...extraEnv,
          },
          maxBuffer: 4 * 1024 * 1024,
        },
        (error, _stdout, stderr) =>
          resolve({
            code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
            stderr: String(stderr),
          }),
      );
    });
  }

  const caches = new Map<number, Promise<string>>();
  const fetching = new Map<number, Promise<unknown>>();

  function cacheOf(projectId: number): Promise<string> {
    let cache = caches.get(projectId);
    if (!cache) {
      cache = (async () => {
        const dir = path.join(cacheDir, `project-${projectId}.git`);
        const init = await git(['init', '--quiet', '--bare', dir]);
        if (init.code !== 0) throw new Error(`could not make the CI's cache: ${init.stderr.trim()}`);
        return dir;
      })();
      caches.set(projectId, cache);
    }
    return cache;
  }

  /** Makes sure the cache holds `sha`, fetching it when not (one fetch per cache at a time). */
  function fetchInto(cache: string, projectId: number, cloneUrl: string, sha: string): Promise<void> {
    const previous = fetching.get(projectId) ?? Promise.resolve();
    const next = previous.then(async () => {
      if ((await git(['-C', cache, 'cat-file', '-e', `${sha}^{commit}`])).code === 0) return;
      const fetched = await git(
        ['-C', cache, 'fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--', cloneUrl, sha],
        { GIT_CONFIG_COUNT: '3', GIT_CONFIG_KEY_2: 'http.extraHeader', GIT_CONFIG_VALUE_2: authorization },
      );
      if (fetched.code !== 0)
        throw new Error(`could not fetch ${sha.slice(0, 11)}: ${fetched.stderr.trim()}`);
    });
    const settled = next.catch(() => undefined);
    fetching.set(projectId, settled);
    void settled.then(() => {
      if (fetching.get(projectId) === settled) fetching.delete(projectId);
    });
    return next;
  }

  return {
    async checkout(project, sha) {
      if (!FULL_SHA.test(sha)) throw new Error(`not a commit id: ${sha}`);
      const cache = await cacheOf(project.id);
      await fetchInto(cache, project.id, project.cloneUrl, sha);
      const dir = await mkdtemp(path.join(work, 'build-'));
      const files = path.join(dir, 'files');
      await mkdir(files);
      await mkdir(path.join(dir, 'home'));
      await mkdir(path.join(dir, 'tmp'));
      // A fresh index, the CI's own: `read-tree -u` writes exactly the commit's tree into the files.
      const index = path.join(cacheDir, `index-${path.basename(dir)}`);
      const done = await git(['--git-dir', cache, '--work-tree', files, 'read-tree', '-u', '--reset', sha], {
        GIT_INDEX_FILE: index,
      });
      await rm(index, { force: true });
      if (done.code !== 0) {
        await rm(dir, { recursive: true, force: true });
        throw new Error(`could not check out ${sha.slice(0, 11)}: ${done.stderr.trim()}`);
      }
      if (buildsAs) await handOver(dir, buildsAs);
      return files;
    },
    async release(files) {
      await rm(path.dirname(files), { recursive: true, force: true });
    },
    async close() {
      await Promise.allSettled([...fetching.values()]);
      await rm(work, { recursive: true, force: true });
    },
  };
}

/** Gives a build folder, whole, to the user the build runs as (symbolic links are not followed). */
async function handOver(dir: string, user: BuildUser): Promise<void> {
  await lchown(dir, user.uid, user.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) await handOver(full, user);
    else await lchown(full, user.uid, user.gid);
  }
}

/**
 * Throws, saying what to change, unless every folder from `dir` up lets others pass (the build user
 * must reach its build folder inside): a CI folder under a private one would fail every build.
 */
async function reachableBy(user: BuildUser, dir: string): Promise<void> {
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    const info = await stat(current);
    const passes =
      (info.mode & 0o001) !== 0 ||
      (info.uid === user.uid && (info.mode & 0o100) !== 0) ||
      (info.gid === user.gid && (info.mode & 0o010) !== 0);
    if (!passes)
      throw new Error(
        `the simulated CI runs builds as the user ${user.name} (the sandbox runs as root), who cannot reach ${current}: let others pass (chmod o+x ${current}) or have the CI work in another folder (TMPDIR)`,
      );
    if (current === path.dirname(current)) return;
  }
}
