import { mkdtemp, mkdir, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkRules } from '../../../src/rules/grammar/check.ts';
import { loadRules } from '../../../src/rules/grammar/load.ts';
import { formatProblem } from '../../../src/rules/grammar/problem.ts';

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
    expect(loaded.byProject('acme/api').needs).toEqual({
      changedFiles: true,
      commentMarkers: false,
      authorAccess: false,
      actorAccess: false,
      mergeGate: false,
      noteChanges: false,
    });
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

  it('refuses duplicate rule names, within a file and across a file and the one it extends', async () => {
    const loaded = await loadRules('test/fixtures/rules/duplicates');
    expect(loaded.problems.map(formatProblem)).toEqual([
      'test/fixtures/rules/duplicates/acme/web.yml:6:11: duplicate rule name "close stale" (first defined at test/fixtures/rules/duplicates/default.yml:5:5) (rule names must be unique in the rules a project gets)',
      'test/fixtures/rules/duplicates/default.yml:9:11: duplicate rule name "triage" (first defined at test/fixtures/rules/duplicates/default.yml:2:5) (rule names must be unique in the rules a project gets)',
    ]);
  });

  it('refuses files that define no rules, and takes the ones that say none on purpose', async () => {
    const loaded = await loadRules('test/fixtures/rules/no-rules');
    expect(loaded.problems.map(formatProblem)).toEqual([
      'test/fixtures/rules/no-rules/acme/api.yml:1:1: no rules: the file defines no `rules:` list (write `rules: []` to mean none on purpose)',
      'test/fixtures/rules/no-rules/default.yml:1:1: no rules: the file defines no `rules:` list (write `rules: []` to mean none on purpose)',
    ]);
    expect(loaded.files).toEqual(['acme/api.yml', 'acme/web.yml', 'default.yml', 'shared/none.yml']);
  });

  it.each(['broken', 'conflicts', 'cycle', 'duplicates', 'example', 'no-rules', 'projects', 'absent'])(
    'refuses exactly what check reports in the %s folder',
    async (name) => {
      const dir = `test/fixtures/rules/${name}`;
      const loaded = (await loadRules(dir)).problems.map(formatProblem);
      expect(loaded).toEqual((await checkRules(dir)).map(formatProblem));
    },
  );

  it('refuses what only shows in the set a project gets, as check does', async () => {
    const loaded = await loadRules('test/fixtures/rules/conflicts');
    expect(
      loaded.problems.map(
        (p) => `${path.relative('test/fixtures/rules/conflicts', p.file)}:${p.line}:${p.column}`,
      ),
    ).toEqual([
      'acme/web.yml:3:11',
      'acme/web.yml:9:10',
      'acme/web.yml:9:17',
      'acme/web.yml:13:9',
      'acme/web.yml:14:16',
      'acme/web.yml:15:10',
      'default.yml:5:31',
      'default.yml:12:31',
    ]);
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

    it.each([
      { name: 'an empty file', text: '' },
      { name: 'a file of comments only', text: '# rules:\n#   - name: later\n' },
      { name: 'an empty mapping', text: '{}\n' },
      { name: 'a null document', text: '~\n' },
      { name: 'a document marker only', text: '---\n' },
    ])('refuses $name as defining no rules, at line 1 column 1', async ({ text }) => {
      dir = await mkdtemp(path.join(tmpdir(), 'hookbot-rules-'));
      await writeFile(path.join(dir, 'default.yml'), text);
      const loaded = await loadRules(dir);
      expect(loaded.problems.map(formatProblem)).toEqual([
        `${path.join(dir, 'default.yml')}:1:1: no rules: the file defines no \`rules:\` list (write \`rules: []\` to mean none on purpose)`,
      ]);
      expect(loaded.byProject('acme/web').rules).toEqual([]);
    });

    it.each([
      { name: 'rules: [] written explicitly', files: { 'default.yml': 'rules: []\n' } },
      { name: 'an empty block list', files: { 'default.yml': '# none yet\nrules: []\n# more later\n' } },
      {
        name: 'a file that only extends another',
        files: { 'default.yml': 'extends: shared.yml\n', 'shared.yml': 'rules: []\n' },
      },
    ])('takes $name', async ({ files }) => {
      dir = await mkdtemp(path.join(tmpdir(), 'hookbot-rules-'));
      for (const [file, text] of Object.entries(files)) await writeFile(path.join(dir, file), text);
      const loaded = await loadRules(dir);
      expect(loaded.problems).toEqual([]);
      expect(await checkRules(dir)).toEqual([]);
      expect(loaded.byProject('acme/web').rules).toEqual([]);
    });

    it('refuses a name that a project file repeats from the default it extends, at the repeat', async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'hookbot-rules-'));
      await mkdir(path.join(dir, 'acme'));
      await writeFile(
        path.join(dir, 'default.yml'),
        'rules:\n  - name: greet\n    on: [issue.open]\n    do: [close]\n',
      );
      await writeFile(
        path.join(dir, 'acme/web.yml'),
        'extends: [../default.yml]\nrules:\n  - name: other\n    on: [push]\n    do: [close]\n  - name: greet\n    on: [push]\n    do: [close]\n',
      );
      const loaded = await loadRules(dir);
      expect(loaded.problems.map(formatProblem)).toEqual([
        `${path.join(dir, 'acme/web.yml')}:6:11: duplicate rule name "greet" (first defined at ${path.join(dir, 'default.yml')}:2:5) (rule names must be unique in the rules a project gets)`,
      ]);
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

describe('loadRules: a file is sized before it is read', () => {
  let dir = '';
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a file over the limit is refused from its size, unread (a sparse 3 GB file: no string can hold it)', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'hookbot-rules-size-'));
    await writeFile(path.join(dir, 'default.yml'), 'rules: []\n');
    const handle = await open(path.join(dir, 'huge.yml'), 'w');
    await handle.truncate(3 * 1024 ** 3);
    await handle.close();
    const loaded = await loadRules(dir);
    expect(loaded.problems.map(formatProblem)).toEqual([
      `${path.join(dir, 'huge.yml')}:1:1: the file is 3145728 KB, over the 256 KB limit of a rule file (split it, or move what is not rules elsewhere)`,
    ]);
  });
});
