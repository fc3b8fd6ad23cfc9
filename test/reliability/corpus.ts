/**
 * The corpus of broken files in `corpus/`: rule files (`rules/`), configurations (`config/`) and
 * state files (`state/`). A case is one `<name>.<ext>.txt` file, or a folder of them for cases that
 * need several files (`extends`). The `.txt` suffix keeps linters and formatters away from files
 * that are broken on purpose; it is dropped when the case is written out.
 *
 * Directives are comment lines at the top of a file:
 *   `# expect: <line>`  a line the refusal must print (all of them, exactly, in order);
 *   `# env: NAME=value` a variable for `hookbot serve` (an empty value removes it);
 *   `# path: a/b.yml`   where the file goes (default: rules `default.yml`, others their own name).
 * In YAML files the directives are plain comments and stay in the file, so positions in `expect`
 * lines are those of the corpus file as it is; other files (state, journal) are written without them.
 * Placeholders: `{dir}` the folder the case is written to, `{file}` the file itself.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface CorpusCase {
  name: string;
  /** What the first comment line says the case is about. */
  about: string;
  /** Relative path (suffix dropped) to file text. */
  files: Map<string, string>;
  expect: string[];
  env: Record<string, string>;
}

const CORPUS = new URL('./corpus/', import.meta.url);

function directives(text: string): {
  about: string;
  expect: string[];
  env: Record<string, string>;
  path?: string;
  body: string;
} {
  const lines = text.split('\n');
  const expect: string[] = [];
  const env: Record<string, string> = {};
  let about = '';
  let target: string | undefined;
  let i = 0;
  for (; i < lines.length && lines[i]!.startsWith('#'); i++) {
    const line = lines[i]!;
    const directive = /^# (expect|env|path): (.*)$/.exec(line);
    if (!directive) {
      if (!about) about = line.replace(/^#\s*/, '');
      continue;
    }
    const [, kind, value] = directive;
    if (kind === 'expect') expect.push(value!);
    else if (kind === 'path') target = value!;
    else {
      const eq = value!.indexOf('=');
      env[value!.slice(0, eq)] = value!.slice(eq + 1);
    }
  }
  return { about, expect, env, path: target, body: lines.slice(i).join('\n') };
}

/** Every case of one part of the corpus (`rules`, `config` or `state`), sorted by name. */
export function readCorpus(part: 'rules' | 'config' | 'state'): CorpusCase[] {
  const root = new URL(`${part}/`, CORPUS).pathname;
  return readdirSync(root)
    .sort()
    .map((entry) => {
      const c: CorpusCase = {
        name: entry.replace(/\.[a-z.]+$/, ''),
        about: '',
        files: new Map(),
        expect: [],
        env: {},
      };
      const add = (source: string, rel: string) => {
        const text = readFileSync(source, 'utf8');
        const d = directives(text);
        c.about ||= d.about;
        c.expect.push(...d.expect);
        Object.assign(c.env, d.env);
        // Only YAML has comments: other files (state, journal) are written without their directives.
        c.files.set(d.path ?? rel, /\.ya?ml$/.test(rel) ? text : d.body);
      };
      const full = path.join(root, entry);
      if (statSync(full).isDirectory()) {
        const walk = (sub: string) => {
          for (const name of readdirSync(path.join(full, sub)).sort()) {
            const rel = sub ? `${sub}/${name}` : name;
            if (statSync(path.join(full, rel)).isDirectory()) walk(rel);
            else add(path.join(full, rel), rel.replace(/\.txt$/, ''));
          }
        };
        walk('');
      } else add(full, part === 'rules' ? 'default.yml' : entry.replace(/\.txt$/, ''));
      return c;
    });
}

export const fill = (text: string, values: Record<string, string>): string =>
  text.replace(/\{(\w+)\}/g, (match, key: string) => values[key] ?? match);

/** Writes the case's files under `dir`; returns the path of the first one. */
export function writeCase(c: CorpusCase, dir: string, values: Record<string, string> = {}): string {
  let first = '';
  for (const [rel, text] of c.files) {
    const file = path.join(dir, rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, fill(text, { dir, file, ...values }));
    first ||= file;
  }
  return first;
}
