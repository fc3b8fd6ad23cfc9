import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadRules } from '../../src/rules/load.ts';
import { formatProblem } from '../../src/rules/problem.ts';

const names = (set: { rules: readonly { name: string }[] }) => set.rules.map((rule) => rule.name);

describe('loadRules', () => {
  it('gives each project its file, extended files first, and the default to the others', async () => {
    const loaded = await loadRules('test/fixtures/rules/projects');
    expect(loaded.problems).toEqual([]);
    expect(loaded.files).toEqual(['acme/api.yml', 'acme/web.yml', 'default.yml']);
    expect(names(loaded.byProject('acme/web'))).toEqual(['welcome', 'web triage']);
    expect(names(loaded.byProject('ACME/Web'))).toEqual(['welcome', 'web triage']);
    expect(names(loaded.byProject('acme/api'))).toEqual(['api changes']);
    expect(names(loaded.byProject('someone/else'))).toEqual(['welcome']);
  });

  it('compiles a file once and shares it between the sets that extend it', async () => {
    const loaded = await loadRules('test/fixtures/rules/projects');
    expect(loaded.byProject('acme/web').rules[0]).toBe(loaded.byProject('someone/else').rules[0]);
    expect(loaded.byProject('acme/api').needs).toEqual({ changedFiles: true, commentMarkers: false });
  });

  it('records where each rule is, for explain', async () => {
    const loaded = await loadRules('test/fixtures/rules/projects');
    expect(loaded.byProject('acme/web').rules[1]?.source).toEqual({
      file: path.join('test/fixtures/rules/projects', 'acme/web.yml'),
      line: 3,
      column: 5,
    });
  });

  it('reports problems and keeps only the valid files of a set', async () => {
    const loaded = await loadRules('test/fixtures/rules/broken');
    expect(loaded.problems.length).toBe(17);
    expect(loaded.byProject('acme/web').rules).toEqual([]);
    expect(formatProblem(loaded.problems[0] ?? { file: '', line: 0, column: 0, message: '' })).toContain(
      'extends "../defaults.yml": no such rules file',
    );
  });

  describe('on a folder written by the test', () => {
    let dir = '';
    afterEach(async () => {
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('stops at an extends cycle and still loads each rule once', async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'hookbot-rules-'));
      await mkdir(path.join(dir, 'acme'));
      await writeFile(
        path.join(dir, 'default.yml'),
        'extends: [acme/web.yml]\nrules: [ { name: d, on: [push], do: [close] } ]\n',
      );
      await writeFile(
        path.join(dir, 'acme/web.yml'),
        'extends: ../default.yml\nrules: [ { name: w, on: [push], do: [close] } ]\n',
      );
      await writeFile(path.join(dir, '.hidden.yml'), 'not: [valid');
      await writeFile(path.join(dir, 'notes.txt'), 'ignored');
      const loaded = await loadRules(dir);
      expect(loaded.files).toEqual(['acme/web.yml', 'default.yml']);
      expect(
        loaded.problems.map((p) => `${path.relative(dir, p.file)}:${p.line}:${p.column}: ${p.message}`),
      ).toEqual(['default.yml:1:11: extends cycle: acme/web.yml -> default.yml -> acme/web.yml']);
      expect(names(loaded.byProject('acme/web'))).toEqual(['d', 'w']);
      expect(names(loaded.byProject('other/x'))).toEqual(['w', 'd']);
    });

    it('refuses a project written twice', async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'hookbot-rules-'));
      await mkdir(path.join(dir, 'acme'));
      await writeFile(path.join(dir, 'acme/web.yml'), 'rules: []\n');
      await writeFile(path.join(dir, 'acme/web.yaml'), 'rules: []\n');
      const loaded = await loadRules(dir);
      expect(loaded.problems.map((p) => p.message)).toEqual([
        'acme/web.yml and acme/web.yaml are the same rules file written twice',
      ]);
    });
  });
});
