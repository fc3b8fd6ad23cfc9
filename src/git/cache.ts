/**
 * The git cache (`git.cache_dir`): one bare repository per repository URL, named by a hash of it,
 * that the branch updater fetches into and makes merge commits in. What it keeps and for how long:
 *
 * - Modes: the folder is created 0700 and git runs with a umask of 077 (git-process.ts), so every
 *   repository is 0700 and every file in it 0600. A repository an older version made 0755 is narrowed
 *   to 0700 when it is next used. A cache folder that already existed is left as it is (it may be
 *   shared), with a warning when other users may list it.
 * - Refs: the target branch of each update is kept (`refs/hookbot/keep/<hash of the branch>`, the
 *   last `keptRefs` used), so the next fetch negotiates from it and downloads only new commits; a
 *   source branch lives under a temporary ref that is deleted after its update.
 * - Pruning: every `gcEveryUpdates` updates of a repository, after the update (the caller does not
 *   wait for it) and under the repository's lock, temporary refs left by a crash and kept refs past the
 *   bound are deleted and `git gc --prune=<pruneAfterMs ago>` drops the objects no ref holds (source
 *   branches, the bot's merge commits): the cache holds the kept branches and what was fetched in the
 *   last `pruneAfterMs`.
 * - Count: at most `maxRepositories` repositories; making a new one deletes the least recently used
 *   ones first (by the repository folder's modification time, set at each use), never one in use.
 *
 * One cache folder belongs to one hookbot process: the locks are in memory. Two processes on one
 * folder do no harm to anything but the cache (an update may fail once and is tried again).
 */
import { createHash } from 'node:crypto';
import { chmod, mkdir, readdir, rm, stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import type { RunGit } from './git-process.ts';

export interface GitCacheOptions {
  /** Absolute. */
  dir: string;
  maxRepositories: number;
  gcEveryUpdates: number;
  /** Objects no ref holds are pruned once they are this old (0: at once). */
  pruneAfterMs: number;
  /** Kept target branches per repository. */
  keptRefs?: number;
  git: RunGit;
  log: (line: string) => void;
}

export interface GitCache {
  /**
   * Runs `fn` in the cache repository of `url`, one at a time per repository (the refs are shared),
   * making the repository when it is new; counts toward that repository's next pruning.
   */
  withRepository<T>(url: string, fn: (repo: string) => Promise<T>): Promise<T>;
  /** The ref a target branch is kept at (marked as used now). */
  keep(repo: string, branch: string): string;
  /** Resolves once every update and pruning started so far is over. */
  idle(): Promise<void>;
}

const REPOSITORY_NAME = /^[0-9a-f]{16}\.git$/;
const KEEP_PREFIX = 'refs/hookbot/keep/';

const hash = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 16);

export function createGitCache(options: GitCacheOptions): GitCache {
  const { dir, git, log } = options;
  const keptRefs = options.keptRefs ?? 8;
  const locks = new Map<string, Promise<unknown>>();
  const updatesSincePrune = new Map<string, number>();
  /** When each kept ref was last used, per repository (refs kept by an earlier process count as oldest). */
  const keptUse = new Map<string, Map<string, number>>();
  let dirChecked = false;

  function exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = locks.get(key) ?? Promise.resolve();
    const result = previous.then(fn, fn);
    const tail = result.catch(() => undefined);
    locks.set(key, tail);
    void tail.then(() => {
      if (locks.get(key) === tail) locks.delete(key);
    });
    return result;
  }

  async function ensureDir(): Promise<void> {
    if (dirChecked) return;
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const mode = (await stat(dir)).mode & 0o777;
    if (mode & 0o077)
      log(
        `the git cache folder ${dir} is mode ${mode.toString(8)}: other users may list it (chmod 700 it); its repositories are 0700`,
      );
    dirChecked = true;
  }

  /** Deletes the least recently used repositories until a new one fits; never one in use. */
  async function makeRoom(making: string): Promise<void> {
    const names = (await readdir(dir)).filter((name) => REPOSITORY_NAME.test(name));
    if (names.length < options.maxRepositories) return;
    const aged: { repo: string; used: number }[] = [];
    for (const name of names) {
      const repo = path.join(dir, name);
      if (repo === making || locks.has(repo)) continue;
      try {
        aged.push({ repo, used: (await stat(repo)).mtimeMs });
      } catch {
        // gone meanwhile
      }
    }
    aged.sort((a, b) => a.used - b.used);
    let count = names.length;
    for (const { repo } of aged) {
      if (count < options.maxRepositories) break;
      await rm(repo, { recursive: true, force: true });
      updatesSincePrune.delete(repo);
      keptUse.delete(repo);
      log(
        `git cache: deleted ${path.basename(repo)}, the least recently used repository (git.cache_max_repositories)`,
      );
      count--;
    }
  }

  async function open(repo: string): Promise<void> {
    await ensureDir();
    let exists = false;
    try {
      const found = await stat(repo);
      exists = found.isDirectory();
      // Made 0755 by an older version: closed to other users now.
      if (exists && found.mode & 0o077) await chmod(repo, 0o700);
    } catch {
      // made below
    }
    if (!exists) {
      await makeRoom(repo);
      const r = await git(dir, ['init', '--quiet', '--bare', '--', repo]);
      if (r.code !== 0) throw new Error(`git init failed (exit ${r.code}): ${r.stderr.trim()}`);
    }
    const now = new Date();
    await utimes(repo, now, now);
  }

  async function prune(repo: string): Promise<void> {
    const listed = await git(repo, ['for-each-ref', '--format=%(refname)', 'refs/hookbot/']);
    if (listed.code !== 0) throw new Error(`git for-each-ref failed: ${listed.stderr.trim()}`);
    const refs = listed.stdout.split('\n').filter(Boolean);
    const used = keptUse.get(repo) ?? new Map<string, number>();
    const kept = refs
      .filter((ref) => ref.startsWith(KEEP_PREFIX))
      .sort((a, b) => (used.get(b) ?? 0) - (used.get(a) ?? 0));
    // No update of this repository runs now (its lock is held): any other ref here is a leftover.
    const doomed = [...refs.filter((ref) => !ref.startsWith(KEEP_PREFIX)), ...kept.slice(keptRefs)];
    if (doomed.length > 0) {
      const r = await git(repo, ['update-ref', '--stdin'], doomed.map((ref) => `delete ${ref}\n`).join(''));
      if (r.code !== 0) throw new Error(`git update-ref failed: ${r.stderr.trim()}`);
      for (const ref of doomed) used.delete(ref);
    }
    const age = options.pruneAfterMs <= 0 ? 'now' : `${Math.ceil(options.pruneAfterMs / 1000)}.seconds.ago`;
    const gc = await git(repo, ['gc', '--quiet', `--prune=${age}`]);
    if (gc.code !== 0) throw new Error(`git gc failed (exit ${gc.code}): ${gc.stderr.trim()}`);
    log(
      `git cache: pruned ${path.basename(repo)} (${doomed.length} refs deleted, objects older than ${age})`,
    );
  }

  return {
    async withRepository(url, fn) {
      const repo = path.join(dir, `${hash(url)}.git`);
      const result = exclusive(repo, async () => {
        await open(repo);
        return fn(repo);
      });
      const count = (updatesSincePrune.get(repo) ?? 0) + 1;
      updatesSincePrune.set(repo, count);
      if (count >= options.gcEveryUpdates) {
        updatesSincePrune.set(repo, 0);
        // After the update, before the next one; the caller has its answer already.
        void exclusive(repo, () => prune(repo)).catch((error: unknown) =>
          log(
            `git cache: pruning ${path.basename(repo)} failed: ${error instanceof Error ? error.message : String(error)}`,
          ),
        );
      }
      return result;
    },
    keep(repo, branch) {
      const ref = `${KEEP_PREFIX}${hash(branch)}`;
      const used = keptUse.get(repo) ?? new Map<string, number>();
      used.set(ref, Date.now());
      keptUse.set(repo, used);
      return ref;
    },
    async idle() {
      while (locks.size > 0) await Promise.all([...locks.values()]);
    },
  };
}
