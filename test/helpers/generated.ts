/**
 * Generated files stay generated: a committed file that differs from what its script writes fails
 * with the file, the command that regenerates it, the first line that differs, and the whole
 * generated text written next to it in the system's temporary folder, so `diff -u` shows every
 * difference (issue 39: an assertion diff cut off in the middle said neither what nor how).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT } from './docs-tables.ts';

/** Throws unless `file` (relative to the repository root) holds `generated`; `command` regenerates it. */
export function expectGenerated(file: string, generated: string, command: string): void {
  const absolute = path.isAbsolute(file) ? file : path.join(ROOT, file);
  const relative = path.relative(ROOT, absolute);
  let current: string | undefined;
  try {
    current = readFileSync(absolute, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === generated) return;
  const dir = path.join(tmpdir(), 'hookbot-generated');
  mkdirSync(dir, { recursive: true });
  const written = path.join(dir, relative.replaceAll('/', '__'));
  writeFileSync(written, generated);
  let where = `${relative} does not exist`;
  if (current !== undefined) {
    const ours = current.split('\n');
    const theirs = generated.split('\n');
    const line = ours.findIndex((text, index) => text !== theirs[index]);
    const at = line < 0 ? ours.length : line;
    where = `first difference at line ${at + 1}:\n  committed: ${JSON.stringify(ours[at] ?? '(end of file)')}\n  generated: ${JSON.stringify(theirs[at] ?? '(end of file)')}`;
  }
  throw new Error(
    `${relative} is not what \`${command}\` generates: run it and commit the result.\n${where}\nThe whole generated text is in ${written}; every difference: diff -u ${relative} ${written}`,
  );
}
