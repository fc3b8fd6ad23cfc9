/**
 * Secrets can be written in the file, given in a variable, or read from a file that holds them
 * (`*_file` keys, Docker and Kubernetes secrets), never only from the YAML (issue 7). A value set
 * in the environment wins over the file, whichever of the two forms either uses.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileErrorReason } from './file-error.ts';
import { deleteIn, getIn, setIn } from './env-overlay.ts';
import { keyName, type ConfigSources, type Problem } from './sources.ts';

export interface SecretKey {
  /** Where the value goes: `api.token`. */
  value: string[];
  /** The key naming a file that holds it: `api.token_file`. */
  file: string[];
}

export const SECRET_KEYS: readonly SecretKey[] = [
  { value: ['api', 'token'], file: ['api', 'token_file'] },
  { value: ['webhook', 'secret'], file: ['webhook', 'secret_file'] },
  { value: ['webhook', 'signature', 'secret'], file: ['webhook', 'signature', 'secret_file'] },
  { value: ['server', 'status_auth', 'password'], file: ['server', 'status_auth', 'password_file'] },
  { value: ['git', 'password'], file: ['git', 'password_file'] },
];

export interface ReadSecretsOptions {
  cwd: string;
  readFile?: (path: string) => string;
}

/**
 * Replaces each `*_file` key by the content of the file it names, in `raw` (the merged file and
 * environment values), and records where each secret came from in `sources`.
 */
export function readSecrets(
  raw: Record<string, unknown>,
  sources: ConfigSources,
  options: ReadSecretsOptions,
): Problem[] {
  const read = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const problems: Problem[] = [];
  for (const secret of SECRET_KEYS) {
    const valueName = keyName(secret.value);
    const fileName = keyName(secret.file);
    const value = getIn(raw, secret.value);
    const file = getIn(raw, secret.file);
    const hasValue = typeof value === 'string' && value !== '';
    const hasFile = typeof file === 'string' && file !== '';
    if (!hasFile) continue;
    if (hasValue) {
      const valueFromEnv = sources[valueName]?.from === 'env';
      const fileFromEnv = sources[fileName]?.from === 'env';
      if (valueFromEnv === fileFromEnv) {
        problems.push({
          key: fileName,
          message: `set either ${valueName} or ${fileName}, not both`,
          source: sources[fileName],
        });
        continue;
      }
      // One of the two came from the environment: it wins, the file's setting is dropped.
      if (valueFromEnv) {
        deleteIn(raw, secret.file);
        delete sources[fileName];
        continue;
      }
    }
    const path = resolve(options.cwd, file);
    let content: string;
    try {
      content = read(path);
    } catch (error) {
      problems.push({
        key: fileName,
        message: `cannot read ${path}: ${fileErrorReason(error)}`,
        source: sources[fileName],
      });
      continue;
    }
    // `echo token > file` and editors add a final newline that is no part of the secret.
    content = content.replace(/[\r\n]+$/, '');
    if (content === '') {
      problems.push({ key: fileName, message: `${path} is empty`, source: sources[fileName] });
      continue;
    }
    setIn(raw, secret.value, content);
    const setBy = sources[fileName];
    sources[valueName] = setBy ? { from: 'secret_file', path, setBy } : { from: 'secret_file', path };
  }
  return problems;
}
