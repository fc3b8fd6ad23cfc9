/**
 * `hookbot check [RULES_DIR]` (and `hookbot check [--allow ACTIONS] [--project NS/NAME] [--rules DIR]
 * [--queue-max-depth N] [--queue-max-batch N] .hookbot.yml` for a repository's own rules, with the
 * operator's allow-list and queue limits: docs/repository-rules.md): validates every rule file of the folder (default: `HOOKBOT_RULES`,
 * else `rules`) the way the bot loads them, plus what only shows across files (duplicate names,
 * label toggles that fight, extends cycles). Exit 0 with a one-line summary; exit 1 with every
 * problem on stdout, one a line, as `file:line:column: message (hint)`, so editors and CI can jump
 * to it.
 */
import type { CliIo, RegisterCommand } from './command.ts';
import { counted } from '../text/index.ts';

/** The one name the bot reads a repository's own rules from (rules/repository/repository-file.ts). */
const REPOSITORY_FILE = '.hookbot.yml';

/** `hookbot check [--allow ACTIONS] [--project NS/NAME] path/to/.hookbot.yml`: a repository's own rules. */
interface RepositoryCheckOptions {
  allow?: string;
  project?: string;
  /** The central rules folder: the names its rules (for `--project`, or the default) take, the queues they feed. */
  rules?: string;
  /** `rules.repository.queue.max_depth` and `max_batch` (default 1, as the bot's). */
  queueMaxDepth?: string;
  queueMaxBatch?: string;
}

/** A `--queue-max-*` value: a whole number from 1 to `max` (default 1), or undefined when it is not one. */
function queueLimit(given: string | undefined, max: number): number | undefined {
  if (given === undefined) return 1;
  const value = Number(given.trim());
  return /^\d+$/.test(given.trim()) && value >= 1 && value <= max ? value : undefined;
}

async function runRepositoryCheck(file: string, options: RepositoryCheckOptions, io: CliIo): Promise<number> {
  const { open } = await import('node:fs/promises');
  const {
    checkRepositoryFile,
    repositoryPolicy,
    formatProblem,
    problemCount,
    MAX_RULE_FILE_BYTES,
    tooLarge,
    MAX_DEPTH,
    MAX_BATCH,
  } = await import('../rules/index.ts');
  const maxDepth = queueLimit(options.queueMaxDepth, MAX_DEPTH);
  const maxBatch = queueLimit(options.queueMaxBatch, MAX_BATCH);
  for (const [flag, given, value, max] of [
    ['--queue-max-depth', options.queueMaxDepth, maxDepth, MAX_DEPTH],
    ['--queue-max-batch', options.queueMaxBatch, maxBatch, MAX_BATCH],
  ] as const)
    if (value === undefined) {
      io.err(`hookbot check: ${flag}: "${given}" is not a whole number from 1 to ${max}\n`);
      return 2;
    }
  let policy;
  try {
    policy = repositoryPolicy(
      (options.allow ?? '')
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
      { maxDepth: maxDepth!, maxBatch: maxBatch! },
    );
  } catch (error) {
    io.err(
      `hookbot check: --allow: ${(error as Error).message.replace(/^rules\.repository\.allow: /, '')}\n`,
    );
    return 2;
  }
  let text: string;
  try {
    // Bounded before it is read, as the bot bounds a repository's file (a file past the limit is
    // refused at its size, never read whole): one byte past the limit tells "over" from "at".
    // The size a stat gives is not trusted to end the read (a device, a pipe, a file growing).
    const handle = await open(file, 'r');
    try {
      const { size, isFile } = await handle.stat().then((s) => ({ size: s.size, isFile: s.isFile() }));
      const buffer = Buffer.alloc(MAX_RULE_FILE_BYTES + 1);
      let bytesRead = 0;
      for (;;) {
        const { bytesRead: got } = await handle.read(buffer, bytesRead, buffer.length - bytesRead, null);
        bytesRead += got;
        if (got === 0 || bytesRead === buffer.length) break;
      }
      if (bytesRead > MAX_RULE_FILE_BYTES) {
        io.out(`${formatProblem(tooLarge(file, isFile && size > MAX_RULE_FILE_BYTES ? size : undefined))}\n`);
        io.err(`hookbot check: 1 problem in ${file}\n`);
        return 1;
      }
      text = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch (error) {
    io.err(`hookbot check: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`);
    return 1;
  }
  let central;
  if (options.rules !== undefined) {
    const { loadRules } = await import('../rules/index.ts');
    const loaded = await loadRules(options.rules);
    if (loaded.problems.length > 0) {
      for (const problem of loaded.problems) io.out(`${formatProblem(problem)}\n`);
      io.err(`hookbot check: the central rules in ${options.rules} have problems\n`);
      return 1;
    }
    central = loaded.byProject(options.project ?? '').rules;
  }
  const checked = checkRepositoryFile(text, {
    file,
    policy,
    ...(options.project !== undefined ? { project: options.project } : {}),
    ...(central ? { central } : {}),
  });
  if (checked.problems.length > 0) {
    for (const problem of checked.problems) io.out(`${formatProblem(problem)}\n`);
    io.err(`hookbot check: ${counted(problemCount(checked.problems), 'problem')} in ${file}\n`);
    return 1;
  }
  io.out(`${file}: ${counted(checked.rules?.length ?? 0, 'rule')} for the repository: no problems\n`);
  return 0;
}

export async function runCheckCommand(
  dir: string | undefined,
  io: CliIo,
  options: RepositoryCheckOptions = {},
): Promise<number> {
  const path = await import('node:path');
  if (dir !== undefined && path.basename(dir) === REPOSITORY_FILE)
    return runRepositoryCheck(dir, options, io);
  const { stat } = await import('node:fs/promises');
  const givenFile =
    dir !== undefined &&
    (await stat(dir).then(
      (found) => found.isFile(),
      () => false,
    ));
  const readsOnly = `the bot reads them only from a file named ${REPOSITORY_FILE} at the root of the repository`;
  const rename = (file: string) =>
    `rename it (mv ${file} ${path.join(path.dirname(file), REPOSITORY_FILE)}) and check that`;
  const repositoryFlags = [
    options.allow,
    options.project,
    options.rules,
    options.queueMaxDepth,
    options.queueMaxBatch,
  ];
  if (repositoryFlags.some((flag) => flag !== undefined)) {
    io.err(
      givenFile
        ? `hookbot check: --allow, --project, --rules, --queue-max-depth and --queue-max-batch check a repository's own rules, and ${dir} is not named ${REPOSITORY_FILE}: ${readsOnly}; ${rename(dir)}. Central rules are checked as their folder, without these flags (hookbot check rules)\n`
        : `hookbot check: --allow, --project, --rules, --queue-max-depth and --queue-max-batch check a repository's own rules file (${REPOSITORY_FILE}), not a rules folder: give the ${REPOSITORY_FILE} file, or the folder without these flags\n`,
    );
    return 2;
  }
  // Loaded here so that `hookbot --help` stays fast.
  const { checkRules, readRuleFolder, formatProblem, problemCount } = await import('../rules/index.ts');

  const folder = dir ?? (process.env.HOOKBOT_RULES || 'rules');
  const problems = await checkRules(folder);
  if (problems.length > 0) {
    for (const problem of problems) io.out(`${formatProblem(problem)}\n`);
    // A YAML file given where a folder goes may be a repository's rules under another name (hb.yml).
    if (dir !== undefined && givenFile && /\.ya?ml$/i.test(dir))
      io.err(`hookbot check: if ${dir} holds a repository's own rules: ${readsOnly}; ${rename(dir)}\n`);
    const files = new Set(problems.map((problem) => problem.file)).size;
    // The count goes to stderr: stdout holds nothing but problems, for tools that parse it.
    io.err(`hookbot check: ${counted(problemCount(problems), 'problem')} in ${counted(files, 'file')}\n`);
    return 1;
  }

  // Read again for the counts: checkRules answers problems only, and a valid folder is small.
  const read = await readRuleFolder(folder);
  const rules = [...read.files.values()].reduce((sum, parsed) => sum + (parsed.spec?.rules.length ?? 0), 0);
  const parts = [
    ...(read.defaultFile !== undefined ? ['the default'] : []),
    ...(read.projectFiles.size > 0 ? [counted(read.projectFiles.size, 'project')] : []),
  ];
  const what = parts.length > 0 ? ` (${parts.join(' and ')})` : '';
  if (read.files.size === 0) {
    io.out(`${folder}: no rule files (the bot would do nothing); write ${folder}/default.yml\n`);
    return 0;
  }
  io.out(`${folder}: ${counted(read.files.size, 'file')}${what}, ${counted(rules, 'rule')}: no problems\n`);
  return 0;
}

export const registerCheckCommand: RegisterCommand = (program, io, setExitCode) => {
  program
    .command('check')
    .description('Validate the rule files: every problem as file:line:column: message (hint).')
    .argument('[rules_dir]', 'the rules folder (default: $HOOKBOT_RULES, else rules), or a .hookbot.yml file')
    .option(
      '--allow <actions>',
      'for a .hookbot.yml: the actions the operator allows besides the defaults (rules.repository.allow), comma-separated',
    )
    .option(
      '--rules <dir>',
      "for a .hookbot.yml: the central rules folder, whose rule names (for --project, else the default's) it may not reuse",
    )
    .option(
      '--project <namespace/project>',
      'for a .hookbot.yml: the project it belongs to (a move stays in its namespace)',
    )
    .option(
      '--queue-max-depth <n>',
      'for a .hookbot.yml: the most depth a queue may ask for (rules.repository.queue.max_depth; default 1)',
    )
    .option(
      '--queue-max-batch <n>',
      'for a .hookbot.yml: the most batch a queue may ask for (rules.repository.queue.max_batch; default 1)',
    )
    .action(async (dir: string | undefined, options: RepositoryCheckOptions) => {
      setExitCode(await runCheckCommand(dir, io, options));
    });
};
