/**
 * The rules in force, reloaded when a file of the folder changes (and on demand, e.g. SIGHUP). A
 * folder with any problem `hookbot check` reports (the loader's problems are the check's) is refused
 * with every problem logged, and the last good rules stay in force: a typo in production never
 * leaves the bot without rules, nor with half of them.
 */
import { watch, type FSWatcher } from 'node:fs';
import type { CompiledRuleSet } from './compile.ts';
import { loadRules, type LoadedRules } from './load.ts';
import { formatProblem, type Problem } from './problem.ts';

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

export interface RulesHolder {
  forProject(pathWithNamespace: string): CompiledRuleSet;
  /** Reads the folder again; resolves with the problems (empty when the new rules are in force). */
  reload(): Promise<Problem[]>;
  state(): RulesState;
  /** Reloads on every change in the folder (debounced) until `close()`. */
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
  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  let loading: Promise<Problem[]> | undefined;

  async function reload(): Promise<Problem[]> {
    const next = await loadRules(dir);
    state.problems = next.problems.map(formatProblem);
    if (next.problems.length > 0 && current !== undefined) {
      state.refused = true;
      log?.error(
        { rules: dir, problems: state.problems },
        'rules refused: the last good rules stay in force',
      );
      return next.problems;
    }
    // The first load is taken even with problems (the valid rules of valid files): a bot that cannot
    // start because of one typo helps nobody; `hookbot check` and the status page show the problems.
    current = next;
    state.refused = false;
    state.loadedAt = Date.now();
    state.files = next.files;
    if (next.problems.length > 0)
      log?.warn({ rules: dir, problems: state.problems }, 'rules loaded with problems');
    else log?.info({ rules: dir, files: next.files.length }, 'rules loaded');
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
  return {
    forProject: (path) => current!.byProject(path),
    reload: () => {
      loading = (loading ?? Promise.resolve([])).then(reload, reload);
      return loading;
    },
    state: () => ({ ...state }),
    watch() {
      if (watcher) return;
      try {
        watcher = watch(dir, { recursive: true }, () => reloadSoon());
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
