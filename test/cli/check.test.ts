/**
 * `hookbot check [RULES_DIR]` through `main()` (output captured) and once as a process: exit 0 with
 * a summary, exit 1 with every problem as `file:line:column: message (hint)` on stdout.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { checkRules, formatProblems } from '../../src/rules/grammar/check.ts';

function capture() {
  const io = {
    outText: '',
    errText: '',
    out: (t: string) => void (io.outText += t),
    err: (t: string) => void (io.errText += t),
  };
  return io;
}

async function run(args: string[]) {
  const io = capture();
  const code = await main(['check', ...args], io);
  return { code, out: io.outText, err: io.errText };
}

const temp = mkdtempSync(path.join(tmpdir(), 'hookbot-check-'));
/** A rules folder written for one test: file name to text. */
function folder(name: string, files: Record<string, string>): string {
  const dir = path.join(temp, name);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

afterEach(() => {
  vi.unstubAllEnvs();
});
afterAll(() => {
  rmSync(temp, { recursive: true, force: true });
});

// Issue 37: a grammar problem anywhere in the file hid what the rules that are valid mean.
const queueGreenAndBroken = `rules:
  - name: queue-green
    for: merge_requests
    on: [merge_request.update]
    if:
      - statuses: { required: [ci/test], state: success }
    do:
      - queue: { statuses: [ci/test] }
  - name: triage
    on: [issue.open]
    if:
      - title: { matches: "(" }
    do:
      - label: { add: [triage] }
`;
const queueStatusesProblem = (file: string) =>
  `${file}:8:9: rule "queue-green" queues with a statuses condition: each time the queue pushes an updated head its statuses are pending, the rule stops matching and the merge request leaves the queue (drop the statuses condition and name the statuses in the action: queue: { statuses: [ci/test] })`;

describe('hookbot check', () => {
  it('counts the problems left out past the bound in its closing line, not the lines it printed', async () => {
    // 1,000 rules without an action: the first 200 problems are placed, the other 800 counted.
    const rules = Array.from({ length: 1000 }, (_, i) => `  - name: r${i}\n    on: [issue.open]\n`).join('');
    const dir = folder('many-problems', { 'default.yml': `rules:\n${rules}` });
    const result = await run([dir]);
    expect(result.code).toBe(1);
    expect(result.out.trimEnd().split('\n')).toHaveLength(201);
    expect(result.err).toBe('hookbot check: 1000 problems in 1 file\n');
  });

  it.each([
    [
      'test/fixtures/rules/example',
      'test/fixtures/rules/example: 1 file (the default), 5 rules: no problems',
    ],
    [
      'test/fixtures/rules/projects',
      'test/fixtures/rules/projects: 3 files (the default and 2 projects), 3 rules: no problems',
    ],
  ])('exits 0 on the valid folder %s with a one-line summary', async (dir, summary) => {
    const result = await run([dir]);
    expect(result).toEqual({ code: 0, out: `${summary}\n`, err: '' });
  });

  it('checks $HOOKBOT_RULES when no folder is given', async () => {
    vi.stubEnv('HOOKBOT_RULES', 'test/fixtures/rules/projects');
    const result = await run([]);
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/^test\/fixtures\/rules\/projects: 3 files/);
  });

  it('checks rules/ when neither a folder nor $HOOKBOT_RULES is given', async () => {
    vi.stubEnv('HOOKBOT_RULES', '');
    const result = await run([]);
    expect(result.out).toMatch(/^rules(: \d+ files? |\/)/);
  });

  it('prints every problem of the broken fixture on stdout, as the checker reports them, and exits 1', async () => {
    const dir = 'test/fixtures/rules/broken';
    const result = await run([dir]);
    expect(result.code).toBe(1);
    expect(result.out).toBe(`${formatProblems(await checkRules(dir))}\n`);
    expect(result.out.trimEnd().split('\n')).toHaveLength(17);
    expect(result.err).toBe('hookbot check: 17 problems in 2 files\n');
  });

  it.each<{ name: string; files: Record<string, string>; lines: string[] }>([
    {
      name: 'a duplicate rule name, at the second one',
      files: {
        'default.yml': [
          'rules:',
          '  - name: greet',
          '    on: [issue.open]',
          '    do: [close]',
          '  - name: greet',
          '    on: [issue.reopen]',
          '    do: [close]',
          '',
        ].join('\n'),
      },
      lines: [
        'default.yml:5:11: duplicate rule name "greet" (first defined at DIR/default.yml:2:5) (rule names must be unique in the rules a project gets)',
      ],
    },
    {
      name: 'a misspelt action and an unknown key, each at its place',
      files: {
        'default.yml': [
          'rules:',
          '  - name: greet',
          '    on: [issue.open]',
          '    do: [clse]',
          '    when: now',
          '',
        ].join('\n'),
      },
      lines: [
        'default.yml:4:10: unknown action "clse" (did you mean "close"?)',
        'default.yml:5:5: unknown rule key "when" (expected one of name, description, on, schedule, for, if, do, allow_bot, summary_status)',
      ],
    },
    {
      name: 'an extends cycle, where it closes',
      files: {
        'a.yml': 'extends: [b.yml]\nrules: []\n',
        'b.yml': 'extends: [a.yml]\nrules: []\n',
      },
      lines: ['b.yml:1:11: extends cycle: a.yml -> b.yml -> a.yml'],
    },
    {
      name: 'an empty default file',
      files: { 'default.yml': '' },
      lines: [
        'default.yml:1:1: no rules: the file defines no `rules:` list (write `rules: []` to mean none on purpose)',
      ],
    },
    {
      name: 'a project file of comments only, and a duplicate name in the default',
      files: {
        'default.yml':
          'rules:\n  - name: a\n    on: [push]\n    do: [close]\n  - name: a\n    on: [push]\n    do: [close]\n',
        'acme/web.yml': '# rules:\n#   - name: web\n',
      },
      lines: [
        'acme/web.yml:1:1: no rules: the file defines no `rules:` list (write `rules: []` to mean none on purpose)',
        'default.yml:5:11: duplicate rule name "a" (first defined at DIR/default.yml:2:5) (rule names must be unique in the rules a project gets)',
      ],
    },
    {
      name: 'a regular expression the linear-time engine cannot run',
      files: {
        'default.yml': [
          'rules:',
          '  - name: slow',
          '    on: [issue.open]',
          "    if: [ { title: { matches: 'fix(?!ed)' } } ]",
          '    do: [close]',
          '',
        ].join('\n'),
      },
      lines: [
        'default.yml:4:31: regular expression /fix(?!ed)/ uses a lookahead (?!…), which the linear-time engine cannot run (combine conditions instead: all of matches and not matches)',
      ],
    },
  ])('reports $name', async ({ name, files, lines }) => {
    const dir = folder(name.replace(/\W+/g, '-'), files);
    const result = await run([dir]);
    expect(result.code).toBe(1);
    expect(result.out).toBe(lines.map((line) => `${dir}/${line.replaceAll('DIR', dir)}\n`).join(''));
  });

  it("rules that feed one queue with a different depth: file:line:column naming the other, with the file's other problems (exit 1)", async () => {
    const queueRule = (name: string, options: string) =>
      `  - name: ${name}\n    on: [merge_request.update]\n    for: merge_requests\n    do:\n      - queue: { statuses: [ci/test]${options} }\n`;
    const dir = folder('queue-shapes', {
      'default.yml': `rules:\n${queueRule('docs', '')}${queueRule('code', ', depth: 4')}${queueRule('docs', ', batch: 2')}`,
    });
    const file = path.join(dir, 'default.yml');
    const result = await run([dir]);
    expect(result.code).toBe(1);
    expect(result.out.trimEnd().split('\n')).toEqual([
      `${file}:11:9: queue "default" is fed by rule "code" with depth 4, batch 1 and by rule "docs" (${file}:6:9) with depth 1, batch 1: the queue would run with the smallest depth and the smallest batch of the merge requests in it (give both queue actions the same depth and batch, or name different queues (queue: { name: ... }))`,
      `${file}:12:11: duplicate rule name "docs" (first defined at ${file}:2:5) (rule names must be unique in the rules a project gets)`,
      `${file}:16:9: queue "default" is fed by rule "docs" with depth 1, batch 2 and by rule "docs" (${file}:6:9) with depth 1, batch 1: the queue would run with the smallest depth and the smallest batch of the merge requests in it (give both queue actions the same depth and batch, or name different queues (queue: { name: ... }))`,
    ]);
    expect(result.err).toBe('hookbot check: 3 problems in 1 file\n');
  });

  it('a queue rule with a statuses condition is reported when another rule of the file has a grammar problem (every problem, exit 1)', async () => {
    const dir = folder('queue-statuses-and-broken', { 'default.yml': queueGreenAndBroken });
    const file = path.join(dir, 'default.yml');
    const result = await run([dir]);
    expect(result.code).toBe(1);
    expect(result.out.trimEnd().split('\n')).toEqual([
      queueStatusesProblem(file),
      `${file}:12:27: invalid regular expression /(/: Unterminated group`,
    ]);
    expect(result.err).toBe('hookbot check: 2 problems in 1 file\n');
  });

  it("a broken file's valid rules count in the sets too: a duplicate name across a broken file and its extender is reported", async () => {
    const dir = folder('duplicate-in-broken', {
      'default.yml': `rules:\n  - name: greet\n    on: [issue.open]\n    do:\n      - label: { add: [x] }\n  - name: bad\n    on: [issue.opened]\n    do:\n      - close\n`,
      'acme/web.yml': `extends: [../default.yml]\nrules:\n  - name: greet\n    on: [issue.open]\n    do:\n      - label: { add: [y] }\n`,
    });
    const result = await run([dir]);
    expect(result.code).toBe(1);
    expect(result.out).toContain(
      `${path.join(dir, 'acme/web.yml')}:3:11: duplicate rule name "greet" (first defined at ${path.join(dir, 'default.yml')}:2:5)`,
    );
    expect(result.out).toContain(`${path.join(dir, 'default.yml')}:7:10: "on" must be one of`);
  });

  it('message and remove_source_branch on a merge train: each at its option, with what to change (issue 37)', async () => {
    const dir = folder('train-options', {
      'default.yml':
        "rules:\n  - name: train\n    on: [merge_request.update]\n    for: merge_requests\n    do:\n      - queue: { statuses: [ci/test], batch: 2, remove_source_branch: true, message: 'M' }\n",
    });
    const file = path.join(dir, 'default.yml');
    const result = await run([dir]);
    expect(result.code).toBe(1);
    const train = `queue "default" of rule "train" is a merge train (depth 1, batch 2), which lands by a fast-forward push of the target branch, not through the server's merge`;
    expect(result.out.trimEnd().split('\n')).toEqual([
      `${file}:6:49: "remove_source_branch" does not apply: ${train}, and the bot deletes no member's source branch (remove remove_source_branch, or make the queue serial (depth: 1, batch: 1) to have the merge delete it)`,
      `${file}:6:77: "message" does not apply: ${train}, so no merge commit is made to carry it (remove message, or make the queue serial (depth: 1, batch: 1) to merge with it)`,
    ]);
  });

  it('exits 0 on a default file that says rules: [] on purpose', async () => {
    const dir = folder('none-on-purpose', { 'default.yml': '# nothing yet\nrules: []\n' });
    const result = await run([dir]);
    expect(result).toEqual({ code: 0, out: `${dir}: 1 file (the default), 0 rules: no problems\n`, err: '' });
  });

  it('exits 1 when the folder does not exist', async () => {
    const dir = path.join(temp, 'missing');
    const result = await run([dir]);
    expect(result.code).toBe(1);
    expect(result.out).toBe(`${dir}:1:1: rules folder not found\n`);
  });

  it('exits 1 on a file, saying it expects the rules folder (the one holding it, for a rule file)', async () => {
    const dir = folder('given-a-file', { 'default.yml': 'rules: []\n' });
    const ruleFile = path.join(dir, 'default.yml');
    expect(await run([ruleFile])).toMatchObject({
      code: 1,
      out: `${ruleFile}:1:1: is a file, not a rules folder (give the folder that holds it, ${dir}: the files of a folder are checked together, as extends joins them)\n`,
    });
    const other = path.join(dir, 'README.md');
    writeFileSync(other, '# notes\n');
    expect(await run([other])).toMatchObject({
      code: 1,
      out: `${other}:1:1: is a file, not a rules folder (give the rules folder, which holds default.yml and <namespace>/<project>.yml files)\n`,
    });
  });

  it('exits 0 on an empty folder but says the bot would do nothing', async () => {
    const dir = folder('empty', {});
    const result = await run([dir]);
    expect(result).toEqual({
      code: 0,
      out: `${dir}: no rule files (the bot would do nothing); write ${dir}/default.yml\n`,
      err: '',
    });
  });

  it('exits 2 on a second folder', async () => {
    const result = await run(['test/fixtures/rules/example', 'test/fixtures/rules/projects']);
    expect(result.code).toBe(2);
    expect(result.err).toContain('too many arguments');
  });

  it('runs as a process: exit 1 with the exact positions of the broken fixture', async () => {
    const failure = await promisify(execFile)(process.execPath, [
      'bin/hookbot.js',
      'check',
      'test/fixtures/rules/broken',
    ]).catch((error: unknown) => error as { code: number; stdout: string; stderr: string });
    expect(failure).toMatchObject({ code: 1 });
    const { stdout, stderr } = failure as { stdout: string; stderr: string };
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(17);
    for (const line of lines) expect(line).toMatch(/^test\/fixtures\/rules\/broken\/[\w/]+\.yml:\d+:\d+: \S/);
    expect(lines).toEqual(
      expect.arrayContaining([
        'test/fixtures/rules/broken/acme/web.yml:6:5: unknown rule key "allow_bots" (did you mean "allow_bot"?)',
        'test/fixtures/rules/broken/default.yml:5:9: unknown condition "titel" (did you mean "title"?)',
        'test/fixtures/rules/broken/default.yml:12:9: unknown action "coment" (did you mean "comment"?)',
        'test/fixtures/rules/broken/default.yml:18:15: invalid schedule "dayly" (did you mean "daily"?)',
      ]),
    );
    expect(stderr).toBe('hookbot check: 17 problems in 2 files\n');
  });
});

describe('hookbot check .hookbot.yml: a repository file, with the operator allow-list', () => {
  const file = path.join(folder('repository', {}), '.hookbot.yml');
  writeFileSync(
    file,
    `rules:
  - name: ship
    on: [merge_request.update]
    if:
      - statuses: { required: [ci/build], state: success }
    do:
      - merge
  - name: hand-over
    on: [issue.open]
    do:
      - move: { to: support/helpdesk }
`,
  );

  it('reports each action the defaults do not allow, at the action, with what to change (exit 1)', async () => {
    const result = await run([file]);
    expect(result.code).toBe(1);
    expect(result.out.trimEnd().split('\n')).toEqual([
      `${file}:7:9: action "merge" is not allowed in repository rules (rule "ship"): it needs the operator's permission (ask the operator to add merge to rules.repository.allow, or to move the rule to the central rules)`,
      `${file}:11:9: action "move" is not allowed in repository rules (rule "hand-over"): it needs the operator's permission (ask the operator to add move to rules.repository.allow, or to move the rule to the central rules)`,
    ]);
    expect(result.err).toBe(`hookbot check: 2 problems in ${file}\n`);
  });

  it('a queue rule with a statuses condition is reported when another rule of the file has a grammar problem (issue 37)', async () => {
    const broken = path.join(folder('repository-queue-statuses', {}), '.hookbot.yml');
    writeFileSync(broken, queueGreenAndBroken);
    const result = await run([broken, '--allow', 'queue']);
    expect(result.code).toBe(1);
    expect(result.out.trimEnd().split('\n')).toEqual([
      queueStatusesProblem(broken),
      `${broken}:12:27: invalid regular expression /(/: Unterminated group`,
    ]);
  });

  it('with --allow, what the operator allows passes; a move still stays in the namespace of --project', async () => {
    const allowed = await run([file, '--allow', 'merge,move']);
    expect(allowed).toMatchObject({ code: 0, out: `${file}: 2 rules for the repository: no problems\n` });
    const moved = await run([file, '--allow', 'merge,move', '--project', 'acme/web']);
    expect(moved.code).toBe(1);
    expect(moved.out).toContain(`${file}:11:9: move to "support/helpdesk" leaves the namespace acme`);
  });

  it('with --rules, a name the central rules use is a problem', async () => {
    const taken = path.join(folder('taken', {}), '.hookbot.yml');
    writeFileSync(taken, 'rules:\n  - name: triage bug reports\n    on: [issue.open]\n    do: [close]\n');
    const result = await run([taken, '--rules', 'test/fixtures/rules/example']);
    expect(result.code).toBe(1);
    expect(result.out).toContain(
      `${taken}:2:11: rule name "triage bug reports" is taken by the operator's rules for this project (test/fixtures/rules/example/default.yml:3:5)`,
    );
    expect((await run([taken])).code).toBe(0);
  });

  it('a queue over the operator limits (serial unless --queue-max-depth and --queue-max-batch say), or fed by the central rules (--rules), at the parameter', async () => {
    const queued = path.join(folder('queued', {}), '.hookbot.yml');
    writeFileSync(
      queued,
      'rules:\n  - name: train\n    on: [merge_request.update]\n    for: merge_requests\n    do:\n      - queue: { statuses: [ci/test], depth: 3 }\n',
    );
    const serial = await run([queued, '--allow', 'queue']);
    expect(serial.code).toBe(1);
    expect(serial.out).toBe(
      `${queued}:6:46: queue depth 3 is over the 1 the operator allows repository rules (rule "train"): depth is how many cars of a merge train tested at once, and the operator, who knows the CI's capacity, sets how large a repository's trains may be (write depth: 1 or less, or ask the operator to raise rules.repository.queue.max_depth (at most 20))\n`,
    );
    expect(await run([queued, '--allow', 'queue', '--queue-max-depth', '3'])).toMatchObject({ code: 0 });
    const central = folder('central-queue', {
      'default.yml':
        'rules:\n  - name: ship\n    on: [merge_request.update]\n    for: merge_requests\n    do:\n      - queue: { statuses: [ci/test] }\n',
    });
    const joins = await run([queued, '--allow', 'queue', '--queue-max-depth', '3', '--rules', central]);
    expect(joins.code).toBe(1);
    expect(joins.out).toContain(
      `${queued}:6:9: queue "default" is fed by the operator's rule "ship" (${path.join(central, 'default.yml')}:2:5) (rule "train"): a repository rule may not join a queue of the central rules`,
    );
    for (const bad of ['0', '21', 'two'])
      expect(await run([queued, '--queue-max-depth', bad])).toMatchObject({
        code: 2,
        err: `hookbot check: --queue-max-depth: "${bad}" is not a whole number from 1 to 20\n`,
      });
    expect((await run(['test/fixtures/rules/example', '--queue-max-batch', '2'])).code).toBe(2);
  });

  it('a file past the 256 KB limit is refused at its size, as the bot refuses it, not read whole (exit 1)', async () => {
    const big = path.join(folder('big', {}), '.hookbot.yml');
    writeFileSync(big, `rules: []\n# ${'x'.repeat(300 * 1024)}\n`);
    const result = await run([big]);
    expect(result.code).toBe(1);
    expect(result.out).toBe(
      `${big}:1:1: the file is 301 KB, over the 256 KB limit of a rule file (split it, or move what is not rules elsewhere)\n`,
    );
    expect(result.err).toBe(`hookbot check: 1 problem in ${big}\n`);
    // A source without end (a device, a pipe) is read up to the limit and no further.
    const endlessFile = path.join(folder('endless', {}), '.hookbot.yml');
    symlinkSync('/dev/zero', endlessFile);
    const endless = await run([endlessFile]);
    expect(endless.code).toBe(1);
    expect(endless.out).toBe(
      `${endlessFile}:1:1: the file is over the 256 KB limit of a rule file (not read past it) (split it, or move what is not rules elsewhere)\n`,
    );
  });

  it('exit 2 for an unknown action in --allow, or --allow with a rules folder', async () => {
    const unknown = await run([file, '--allow', 'merg']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('"merg" is not an action (did you mean "merge"?)');
    expect((await run(['test/fixtures/rules/example', '--allow', 'merge'])).code).toBe(2);
  });

  it('a repository file under another name (hb.yml) with --project: says it expects .hookbot.yml and how to rename it (exit 2)', async () => {
    const dir = folder('other-name', {});
    const other = path.join(dir, 'hb.yml');
    writeFileSync(other, 'rules:\n  - name: x\n    on: [issue.open]\n    do: [close]\n');
    const result = await run(['--project', 'acme/web', other]);
    expect(result.code).toBe(2);
    expect(result.err).toBe(
      `hookbot check: --allow, --project, --rules, --queue-max-depth and --queue-max-batch check a repository's own rules, and ${other} is not named .hookbot.yml: the bot reads them only from a file named .hookbot.yml at the root of the repository; rename it (mv ${other} ${path.join(dir, '.hookbot.yml')}) and check that. Central rules are checked as their folder, without these flags (hookbot check rules)\n`,
    );
    expect(result.err).not.toContain('not a rules folder');
  });

  it('the same file without flags: the folder problem as before, and the rename for a repository file', async () => {
    const dir = folder('other-name-plain', {});
    const other = path.join(dir, 'hb.yml');
    writeFileSync(other, 'rules: []\n');
    const result = await run([other]);
    expect(result.code).toBe(1);
    expect(result.out).toContain(`${other}:1:1: is a file, not a rules folder`);
    expect(result.err).toContain(
      `hookbot check: if ${other} holds a repository's own rules: the bot reads them only from a file named .hookbot.yml at the root of the repository; rename it (mv ${other} ${path.join(dir, '.hookbot.yml')}) and check that\n`,
    );
  });
});
