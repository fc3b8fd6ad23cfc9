/**
 * The rules in force, reloaded when a file of the folder changes (and on demand, e.g. SIGHUP). A
 * folder with any problem `hookbot check` reports (the loader's problems are the check's) is refused
 * with every problem logged, and the last good rules stay in force: a typo in production never
 * leaves the bot without rules, nor with half of them. At start there are no last good rules, so a
 * folder with problems is refused outright (RulesProblemsError, every problem listed) rather than
 * half-loaded: the rules of the valid files alone could act where a broken file held them back (an
 * automerge rule without the broken file's do-not-merge guard).
 */
import type { CompiledRuleSet } from '../engine/compile.ts';
import { loadRules, type LoadedRules } from './load.ts';
import { formatProblem, type Problem } from './problem.ts';
import { watchFolder, type FolderWatch } from './watch-folder.ts';

export interface RulesLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface RulesState {
  /** When the rules in force were loaded (ms since the epoch); undefined before the first good load. */
  loadedAt?: number;
  files: string[];
  /** Problems of the last load attempt (empty when it succeeded). */
  problems: string[];
  /** Whether the last attempt was refused (and older rules are in force). */
  refused: boolean;
}

/** The rules folder has problems at start: nothing is loaded. */
export class RulesProblemsError extends Error {
  readonly problems: string[];
  constructor(dir: string, problems: string[]) {
    super(
      `the rules in ${dir} have problems (nothing is loaded until they are fixed; \`hookbot check ${dir}\` lists them too):\n${problems.map((p) => `  ${p}`).join('\n')}`,
    );
    this.name = 'RulesProblemsError';
    this.problems = problems;
  }
}

export interface RulesHolder {
  forProject(pathWithNamespace: string): CompiledRuleSet;
  /** Reads the folder again; resolves with the problems (empty when the new rules are in force). */
  reload(): Promise<Problem[]>;
  state(): RulesState;
  /** Called after each load that put new rules in force (not at the first load). */
  onReload(listener: () => void): void;
  /**
   * Reloads on every change in the folder or its subfolders (debounced) until `close()`, files
   * replaced by a rename included (watch-folder.ts).
   */
  watch(): void;
  close(): void;
}

export async function createRulesHolder(
  dir: string,
  options: { log?: RulesLog; debounceMs?: number } = {},
): Promise<RulesHolder> {
  const log = options.log;
  let current: LoadedRules | undefined;
  const state: RulesState = { files: [], problems: [], refused: false };
  let watcher: FolderWatch | undefined;
  let timer: NodeJS.Timeout | undefined;
  let loading: Promise<Problem[]> | undefined;
  const listeners: (() => void)[] = [];
  let loadedOnce = false;

  async function reload(): Promise<Problem[]> {
    const next = await loadRules(dir);
    state.problems = next.problems.map(formatProblem);
    if (next.problems.length > 0) {
      state.refused = true;
      if (current !== undefined)
        log?.error(
          { rules: dir, problems: state.problems },
          'rules refused: the last good rules stay in force',
        );
      return next.problems;
    }
    current = next;
    state.refused = false;
    state.loadedAt = Date.now();
    state.files = next.files;
    log?.info({ rules: dir, files: next.files.length }, 'rules loaded');
    if (loadedOnce) for (const listener of listeners) listener();
    loadedOnce = true;
    return next.problems;
  }

  /** One load at a time; a change during a load schedules another. */
  function reloadSoon(): void {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      loading = (loading ?? Promise.resolve([])).then(reload, reload).catch((error: unknown) => {
        log?.error({ rules: dir, err: error }, 'rules reload failed');
        return [];
      });
    }, options.debounceMs ?? 200);
  }

  await reload();
  if (current === undefined) throw new RulesProblemsError(dir, state.problems);
  return {
    forProject: (path) => current!.byProject(path),
    reload: () => {
      loading = (loading ?? Promise.resolve([])).then(reload, reload);
      return loading;
    },
    state: () => ({ ...state }),
    onReload(listener) {
      listeners.push(listener);
    },
    watch() {
      if (watcher) return;
      try {
        watcher = watchFolder(
          dir,
          () => reloadSoon(),
          (error) =>
            log?.warn(
              { rules: dir, err: error },
              'the rules folder is no longer watched (removed?); reload with SIGHUP once it is back',
            ),
        );
      } catch (error) {
        log?.warn({ rules: dir, err: error }, 'cannot watch the rules folder; reload with SIGHUP');
      }
    },
    close() {
      watcher?.close();
      watcher = undefined;
      if (timer) clearTimeout(timer);
    },
  };
}
