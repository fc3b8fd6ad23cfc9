/**
 * The check the tests' and benchmarks' simulated CI runs on a commit's files, with a semantic conflict
 * in mind: every line `calls: NAME` in any file needs a line `def NAME` in some file. Two merge requests
 * that each pass alone can fail together (one renames `def foo` to `def bar`, the other adds
 * `calls: foo`), which no textual merge sees.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/** The names a tree defines and calls, from the text of its files. */
export function definitionsAndCalls(texts: Iterable<string>): { defs: Set<string>; calls: Set<string> } {
  const defs = new Set<string>();
  const calls = new Set<string>();
  for (const text of texts)
    for (const line of text.split('\n')) {
      const def = /^def (\w+)/.exec(line);
      if (def?.[1]) defs.add(def[1]);
      const call = /^calls: (\w+)/.exec(line);
      if (call?.[1]) calls.add(call[1]);
    }
  return { defs, calls };
}

/** Whether every name called is defined. */
export function passesCheck(texts: Iterable<string>): boolean {
  const { defs, calls } = definitionsAndCalls(texts);
  return [...calls].every((name) => defs.has(name));
}

/** The check over a folder of files (a checkout of the commit). */
export async function semanticCheck(dir: string): Promise<boolean> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const texts: string[] = [];
  for (const entry of entries)
    if (entry.isFile()) texts.push(await readFile(path.join(entry.parentPath, entry.name), 'utf8'));
  return passesCheck(texts);
}
