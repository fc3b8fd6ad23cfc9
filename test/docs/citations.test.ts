/**
 * The project stands alone: nothing in it cites reference files from outside the repository (the
 * `../shared/` folder it was written from), and every citation of a project doc (`docs/x.md#anchor`
 * in a comment, a Markdown link in a doc) names a file and a heading that exist.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const THIS_FILE = path.relative(ROOT, fileURLToPath(import.meta.url));
/**
 * What the repository ignores (`.gitignore`: folders, `*.ext`, names) is not part of it: test reports
 * and local data quote whatever they like.
 */
const IGNORED = readFileSync(path.join(ROOT, '.gitignore'), 'utf8')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'));
// A name without `/` (`node_modules`) ignores a folder as well as a file or link of that name, as git does.
const SKIPPED_DIRS = new Set([
  '.git',
  ...IGNORED.filter((p) => !p.startsWith('*.')).map((p) => p.replace(/\/$/, '')),
]);
const ignoredFile = (name: string) =>
  IGNORED.some((p) => (p.startsWith('*.') ? name.endsWith(p.slice(1)) : p === name));
const TEXT_FILE = /\.(ts|js|mjs|cjs|md|yml|yaml|json|sh|txt)$|(^|\/)(Dockerfile|run)$/;
/** Comments are where code cites docs; string literals hold test data such as `docs/a.md`. */
const CODE_FILE = /\.(ts|js|mjs|cjs|sh|yml|yaml)$|(^|\/)(Dockerfile|run)$/;

function repositoryFiles(dir = ROOT): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) files.push(...repositoryFiles(path.join(dir, entry.name)));
    } else if (entry.isFile() && !ignoredFile(entry.name)) {
      const file = path.relative(ROOT, path.join(dir, entry.name)).split(path.sep).join('/');
      if (TEXT_FILE.test(file) && file !== THIS_FILE && statSync(path.join(ROOT, file)).size < 2_000_000)
        files.push(file);
    }
  }
  return files;
}

/** GitHub's anchors of a Markdown file: headings lowercased, punctuation dropped, spaces to `-`. */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(path.join(ROOT, file), 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    let unique = slug;
    for (let n = 1; anchors.has(unique); n++) unique = `${slug}-${n}`;
    anchors.add(unique);
  }
  return anchors;
}

/** The text of a code line that is comment (whole comment lines, or what follows ` // `). */
function commentOf(line: string): string {
  const trimmed = line.trim();
  if (/^(\/\/|\/\*|\*|#)/.test(trimmed)) return line;
  const at = line.indexOf(' // ');
  return at >= 0 ? line.slice(at) : '';
}

/** Problems of one citation of `target` (a repository path, maybe with `#anchor`). */
function checkTarget(target: string, where: string): string[] {
  const [file = '', anchor] = target.split('#');
  if (!existsSync(path.join(ROOT, file))) return [`${where}: cites ${target}, which does not exist`];
  if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(file).has(anchor))
    return [`${where}: cites ${target}, but ${file} has no heading #${anchor}`];
  return [];
}

/** Every bad citation in `content`, the text of the repository's `file`. */
function problemsOf(file: string, content = readFileSync(path.join(ROOT, file), 'utf8')): string[] {
  const problems: string[] = [];
  const lines = content.split('\n');
  const dir = path.posix.dirname(file);
  const isMarkdown = file.endsWith('.md');
  lines.forEach((line, index) => {
    const where = `${file}:${index + 1}`;
    // Reference files from outside the repository: a `../shared/` path that leads nowhere here
    // (a rules fixture has a folder of its own called `shared`), or the outside files by name.
    for (const match of line.matchAll(/(?:\.\.\/)+shared\/[\w./-]*/g))
      if (!existsSync(path.join(ROOT, dir, match[0])))
        problems.push(`${where}: cites ${match[0]}, outside the repository`);
    if (/server-facts\.md|(?<![\w/-])shared\/(payloads|api-v3\.md|design\.md|merge-queue\.md)/.test(line))
      problems.push(`${where}: cites a reference file from outside the repository`);
    if (!isMarkdown && /(?<![\w/.-])api-v3\.md/.test(line))
      problems.push(`${where}: cites api-v3.md without its place (docs/api-v3.md)`);

    // Citations of the project's docs, from the repository's root.
    const text = isMarkdown ? line : CODE_FILE.test(file) ? commentOf(line) : '';
    for (const match of text.matchAll(/(?<![\w/.-])docs\/[\w./-]+\.md(?:#[\w-]+)?/g))
      problems.push(...checkTarget(match[0], where));
    // A doc named without its folder, in a comment (`design.md`): one of the project's docs or the
    // README, else a file users do not have.
    // (A line already found citing an outside file is not counted twice.)
    if (!isMarkdown && !problems.some((problem) => problem.startsWith(`${where}:`)))
      for (const match of text.matchAll(/(?<![\w/.-])([\w-]+\.md)\b/g))
        if (!existsSync(path.join(ROOT, 'docs', match[1]!)) && !existsSync(path.join(ROOT, match[1]!)))
          problems.push(`${where}: cites ${match[1]}, which is neither in docs/ nor at the root`);
    // Markdown links, from the citing file's folder.
    if (isMarkdown)
      for (const match of line.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const resolved = target.startsWith('#')
          ? `${file}${target}`
          : path.posix.normalize(path.posix.join(dir, target));
        problems.push(...checkTarget(resolved, where));
      }
  });
  return problems;
}

describe('the project stands alone', () => {
  const files = repositoryFiles();

  it('reads the whole repository', () => {
    expect(files).toContain('README.md');
    expect(files).toContain('docs/api-v3.md');
    expect(files).toContain('src/sandbox/server.ts');
  });

  it('cites no reference file from outside it and only docs and headings that exist', () => {
    expect(files.flatMap((file) => problemsOf(file))).toEqual([]);
  });

  // A checker that finds nothing proves nothing: it must see each kind of bad citation.
  it.each([
    ['src/x.ts', '// as ../shared/api-v3.md states', 1],
    ['src/x.ts', ' * (server-facts.md, "Labels")', 1],
    ['src/x.ts', '/** Labels (api-v3.md "Labels"). */', 1],
    ['src/x.ts', '// the samples in shared/payloads/', 1],
    ['src/x.ts', '// docs/server-behaviour.md#labels', 0],
    ['src/x.ts', '// docs/server-behaviour.md#no-such-heading', 1],
    ['src/x.ts', ' * see docs/no-such-doc.md', 1],
    ['src/x.ts', "const file = 'docs/a.md'; // a path in a test repository", 0],
    ['src/x.ts', ' * safe to run twice (design.md: "make every handler safe to run twice")', 1],
    ['src/x.ts', ' * as rules.md says; see also README.md', 0],
    ['docs/x.md', 'See [the API](api-v3.md#labels) and [facts](server-behaviour.md#labels).', 0],
    ['docs/x.md', 'See [the API](api-v3.md#no-such-heading).', 1],
    ['docs/x.md', 'See [nothing](no-such-doc.md) and [here](#no-such-heading).', 2],
    ['test/fixtures/rules/no-rules/acme/web.yml', 'extends: [../shared/none.yml]', 0],
  ])('in %s, %j has %i problem(s)', (file, line, count) => {
    expect(problemsOf(file, line)).toHaveLength(count);
  });
});
