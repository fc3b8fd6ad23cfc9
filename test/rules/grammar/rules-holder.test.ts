import { mkdirSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRulesHolder, RulesProblemsError } from '../../../src/rules/grammar/rules-holder.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const rule = (name: string) =>
  [
    'rules:',
    `  - name: ${name}`,
    '    on: [issue.open]',
    '    if: [ { state: opened } ]',
    '    do: [ close ]',
    '',
  ].join('\n');

function folder(text: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-rules-'));
  writeFileSync(path.join(dir, 'default.yml'), text);
  return dir;
}

const names = (holder: Awaited<ReturnType<typeof createRulesHolder>>) =>
  holder.forProject('acme/web').rules.map((r) => r.name);

describe('rules in force, reloaded', () => {
  it('refuses to start on a folder with problems, listing them all, rather than load half of it', async () => {
    const dir = folder(rule('automerge'));
    mkdirSync(path.join(dir, 'acme'));
    // The guard of one project is broken: loading the rest alone would merge what it holds back.
    writeFileSync(
      path.join(dir, 'acme/web.yml'),
      'extends: [../default.yml]\nrules:\n  - name: guard\n    on: [merge_request.update]\n    do: [ cancel_merge ]\n    iff: []\n',
    );
    const failure = await createRulesHolder(dir).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RulesProblemsError);
    const { problems, message } = failure as RulesProblemsError;
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/acme\/web\.yml:6:5: .*iff/);
    expect(message).toContain('nothing is loaded until they are fixed');
    expect(message).toContain(problems[0]);
  });

  it('takes new valid rules on reload', async () => {
    const dir = folder(rule('first'));
    const holder = await createRulesHolder(dir);
    expect(names(holder)).toEqual(['first']);
    writeFileSync(path.join(dir, 'default.yml'), rule('second'));
    expect(await holder.reload()).toEqual([]);
    expect(names(holder)).toEqual(['second']);
    expect(holder.state()).toMatchObject({ refused: false, problems: [], files: ['default.yml'] });
  });

  it('refuses a broken folder, logs every problem, and keeps the last good rules in force', async () => {
    const dir = folder(rule('good'));
    const errors: unknown[] = [];
    const holder = await createRulesHolder(dir, {
      log: { info: () => undefined, warn: () => undefined, error: (obj) => errors.push(obj) },
    });
    writeFileSync(
      path.join(dir, 'default.yml'),
      'rules:\n  - name: bad\n    on: [issue.open]\n    do: [ { coment: hi } ]\n',
    );
    const problems = await holder.reload();
    expect(problems.length).toBeGreaterThan(0);
    expect(names(holder)).toEqual(['good']);
    expect(holder.state().refused).toBe(true);
    expect(holder.state().problems.join('\n')).toMatch(/default\.yml:4:\d+: .*coment/);
    expect(errors).toHaveLength(1);
  });

  it.each([
    {
      name: 'a file that repeats a rule name',
      text: `${rule('good')}  - name: good\n    on: [issue.close]\n    do: [ reopen ]\n`,
      problem: /^.*default\.yml:6:11: duplicate rule name "good" \(first defined at .*default\.yml:2:5\)/,
    },
    {
      name: 'an empty file',
      text: '',
      problem:
        /^.*default\.yml:1:1: no rules: the file defines no `rules:` list \(write `rules: \[\]` to mean none on purpose\)$/,
    },
    {
      name: 'a file of comments only',
      text: '# rules:\n#   - name: good\n',
      problem: /^.*default\.yml:1:1: no rules: the file defines no `rules:` list/,
    },
  ])('keeps the last good rules when $name is dropped in', async ({ text, problem }) => {
    const dir = folder(rule('good'));
    const errors: unknown[] = [];
    const holder = await createRulesHolder(dir, {
      log: { info: () => undefined, warn: () => undefined, error: (obj) => errors.push(obj) },
    });
    writeFileSync(path.join(dir, 'default.yml'), text);
    const problems = await holder.reload();
    expect(problems).toHaveLength(1);
    expect(names(holder)).toEqual(['good']);
    expect(holder.state().refused).toBe(true);
    expect(holder.state().problems).toHaveLength(1);
    expect(holder.state().problems[0]).toMatch(problem);
    expect(errors).toHaveLength(1);
  });

  it('keeps the last good rules when a project file repeats a name of the default it extends', async () => {
    const dir = folder(rule('good'));
    const holder = await createRulesHolder(dir);
    mkdirSync(path.join(dir, 'acme'));
    writeFileSync(path.join(dir, 'acme/web.yml'), `extends: [../default.yml]\n${rule('good')}`);
    const problems = await holder.reload();
    expect(problems.map((p) => `${path.relative(dir, p.file)}:${p.line}:${p.column}: ${p.message}`)).toEqual([
      `acme/web.yml:3:11: duplicate rule name "good" (first defined at ${path.join(dir, 'default.yml')}:2:5)`,
    ]);
    expect(holder.state()).toMatchObject({ refused: true, files: ['default.yml'] });
    expect(names(holder)).toEqual(['good']);
  });

  it('takes rules: [] written on purpose: no rules, nothing refused', async () => {
    const dir = folder(rule('good'));
    const holder = await createRulesHolder(dir);
    writeFileSync(path.join(dir, 'default.yml'), '# none on purpose while we migrate\nrules: []\n');
    expect(await holder.reload()).toEqual([]);
    expect(names(holder)).toEqual([]);
    expect(holder.state()).toMatchObject({ refused: false, problems: [] });
  });

  it('reloads by itself when a file of the folder changes', async () => {
    const dir = folder(rule('before'));
    const holder = await createRulesHolder(dir, { debounceMs: 20 });
    holder.watch();
    try {
      writeFileSync(path.join(dir, 'default.yml'), rule('after'));
      await waitFor(() => (names(holder)[0] === 'after' ? true : undefined), 10_000, 'the reload');
      expect(names(holder)).toEqual(['after']);
    } finally {
      holder.close();
    }
  });

  it('keeps seeing in-place edits after a file was replaced by a rename (sed -i, safe writes), in subfolders too', async () => {
    const dir = folder(rule('r0'));
    const holder = await createRulesHolder(dir, { debounceMs: 20 });
    holder.watch();
    const reloaded = (name: string, project = 'acme/web') =>
      waitFor(
        () => (holder.forProject(project).rules.some((r) => r.name === name) ? true : undefined),
        10_000,
        `the reload with rule ${name}`,
      );
    try {
      const file = path.join(dir, 'default.yml');
      // Replaced by a rename, as `sed -i` and editors' safe write do: a new file takes the name.
      writeFileSync(`${file}.tmp`, rule('renamed'));
      renameSync(`${file}.tmp`, file);
      await reloaded('renamed');
      // Then written in place, again and again: each write is seen.
      for (let i = 1; i <= 3; i++) {
        writeFileSync(file, rule(`in-place-${i}`));
        await reloaded(`in-place-${i}`);
      }
      // A subfolder made after the watch started, its file replaced by a rename, then edited in place.
      mkdirSync(path.join(dir, 'acme'));
      const own = path.join(dir, 'acme', 'web.yml');
      writeFileSync(own, rule('own'));
      await reloaded('own');
      writeFileSync(`${own}.tmp`, rule('own-renamed'));
      renameSync(`${own}.tmp`, own);
      await reloaded('own-renamed');
      writeFileSync(own, rule('own-in-place'));
      await reloaded('own-in-place');
      expect(holder.forProject('other/project').rules.map((r) => r.name)).toEqual(['in-place-3']);
    } finally {
      holder.close();
    }
  });
});
