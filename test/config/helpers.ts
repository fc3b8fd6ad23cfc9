import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { loadConfig, type LoadConfigOptions, type LoadConfigResult } from '../../src/config/load-config.ts';

/** A fresh folder per test, removed afterwards: config files and secret files are written there. */
export function useTempDir(): () => string {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookbot-config-'));
    dirs.push(dir);
    return dir;
  };
}

export interface LoadInput {
  /** Written to config.yml in the folder; none: no config file. */
  yaml?: string;
  env?: NodeJS.ProcessEnv;
  /** Further files in the folder (secret files), name -> content. */
  files?: Record<string, string>;
  inDocker?: boolean;
  options?: Partial<LoadConfigOptions>;
}

/** loadConfig run in `dir`, outside Docker unless told, with `config.yml` as the file. */
export function loadIn(dir: string, input: LoadInput): LoadConfigResult {
  if (input.yaml !== undefined) writeFileSync(join(dir, 'config.yml'), input.yaml);
  for (const [name, content] of Object.entries(input.files ?? {})) writeFileSync(join(dir, name), content);
  return loadConfig({
    ...(input.yaml !== undefined ? { file: 'config.yml' } : {}),
    env: input.env ?? {},
    cwd: dir,
    inDocker: input.inDocker ?? false,
    ...input.options,
  });
}

export function expectOk(result: LoadConfigResult): Extract<LoadConfigResult, { ok: true }> {
  if (!result.ok) throw new Error(`expected a valid configuration, got:\n${result.problems.join('\n')}`);
  return result;
}

export function expectProblems(result: LoadConfigResult): string[] {
  if (result.ok) throw new Error('expected problems, the configuration was accepted');
  return result.problems;
}
