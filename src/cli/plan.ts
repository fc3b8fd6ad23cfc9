/**
 * `hookbot plan [--rules DIR] [--current DIR] [--project NS/NAME] [--format text|markdown|json]
 * [--config FILE]`: what a change of the central rules would do. The rules of `--rules` (the
 * proposed ones) and of `--current` (the rules in force: currentFolder below) are evaluated in dry
 * run on every open issue and merge request of each project (the configured ones, every project
 * the bot's user sees, or `--project`), and what would change is listed per project, as on a merge
 * request that changes a `.hookbot.yml` (docs/repository-rules.md).
 *
 * Read-only like `simulate`: every call but a GET is refused before it leaves the process. Bounded
 * per project by `rules.repository.plan_items` and `plan_api_calls`, said when reached. Exit 0 with
 * no problems; 1 when a rules folder has problems or the server could not be read; 2 when the
 * command line is wrong.
 */
import type { CliIo, RegisterCommand } from './command.ts';
import { configProblems } from './config-problems.ts';
import type { CompiledRuleSet, PlanReport } from '../rules/index.ts';
import { counted } from '../text/index.ts';

interface PlanOptions {
  rules?: string;
  current?: string;
  project?: string;
  format?: string;
  config?: string;
}

const FORMATS = ['text', 'markdown', 'json'] as const;
type Format = (typeof FORMATS)[number];
const PROJECT = /^[^/\s]+\/[^/\s]+$/;

const usage = (io: CliIo, message: string): number => {
  io.err(`hookbot plan: ${message}\n`);
  return 2;
};

/**
 * The rules in force to compare with: `--current DIR` (`none`: nothing); else, when `--rules` names
 * another folder, the configured one (`rules.dir`) if it exists; else nothing.
 */
async function currentFolder(options: PlanOptions, configured: string): Promise<string | undefined> {
  if (options.current === 'none') return undefined;
  if (options.current !== undefined) return options.current;
  if (options.rules === undefined) return undefined;
  const path = await import('node:path');
  if (path.resolve(options.rules) === path.resolve(configured)) return undefined;
  const { stat } = await import('node:fs/promises');
  const found = await stat(configured).catch(() => undefined);
  return found?.isDirectory() ? configured : undefined;
}

export async function runPlanCommand(options: PlanOptions, io: CliIo): Promise<number> {
  const format = (options.format ?? 'text') as Format;
  if (!FORMATS.includes(format))
    return usage(io, `--format must be text, markdown or json (got "${format}")`);
  if (options.project !== undefined && !PROJECT.test(options.project))
    return usage(io, `--project must be namespace/project, e.g. acme/web (got "${options.project}")`);

  // Loaded here so that `hookbot --help` stays fast.
  const { loadConfig } = await import('../config/index.ts');
  const { loadRules, formatProblem, planChange, planLines, ruleSet } = await import('../rules/index.ts');
  const { readOnlyClient } = await import('./simulate-client.ts');
  const { statusTrust } = await import('../api/index.ts');
  const { apiProblem, missingProject } = await import('./api-problem.ts');

  const loaded = loadConfig({
    file: options.config,
    env: process.env,
    receivesHooks: false,
    unknownVariables: false,
  });
  if (!loaded.ok) {
    io.err(`hookbot plan: ${configProblems(loaded.problems)}\n`);
    return 1;
  }
  const { config } = loaded;
  if (config.api.url === undefined || config.api.token === undefined) {
    const { noServerMessage } = await import('./sandbox-lines.ts');
    io.err(
      `hookbot plan: ${await noServerMessage('plan', config, loaded.sources['rules.dir'] !== undefined)}\n`,
    );
    return 1;
  }
  const proposedDir = options.rules ?? config.rules.dir;
  const currentDir = await currentFolder(options, config.rules.dir);
  const proposed = await loadRules(proposedDir);
  const current = currentDir === undefined ? undefined : await loadRules(currentDir);
  const problems = [...proposed.problems, ...(current?.problems ?? [])].map(formatProblem);
  if (problems.length > 0) {
    if (format === 'json')
      io.out(
        `${JSON.stringify({ proposed: proposedDir, current: currentDir ?? null, problems, projects: [] }, null, 2)}\n`,
      );
    else for (const problem of problems) io.out(`${problem}\n`);
    io.err(
      `hookbot plan: the rules have problems (the bot would refuse them; hookbot check lists them too)\n`,
    );
    return 1;
  }

  // Whose statuses count, as the running bot counts them (rules.status_authors).
  let botName: string | undefined = config.api.bot_username;
  const trust = statusTrust(config.rules.status_authors, () => botName);
  const client = readOnlyClient({
    baseUrl: config.api.url,
    token: config.api.token,
    tokenType: config.api.token_type,
    timeoutMs: config.api.timeout_ms,
    concurrency: config.api.concurrency,
    retry: { limit: config.api.retry.limit, baseDelayMs: config.api.retry.base_delay_ms },
    ...(trust ? { statusTrust: trust } : {}),
  });
  // The bot's queue memory, from the state it is configured with (queue-memory.ts): a merge request
  // the queue took out at its head is not queued again, by either set of rules (issue 37).
  // Read only for a project whose rules queue, once.
  const { readQueueMemory, unreadMemoryRemark } = await import('./queue-memory.ts');
  let reading: ReturnType<typeof readQueueMemory> | undefined;
  const memoryFor = (sets: readonly CompiledRuleSet[]) =>
    sets.some((set) => set.rules.some((rule) => rule.actions.some((action) => action.name === 'queue')))
      ? (reading ??= readQueueMemory(
          config.state.database_url
            ? { database: config.state.database_url, schema: config.state.database_schema }
            : { state: config.state.path },
          'plan',
        ))
      : undefined;
  const reports: PlanReport[] = [];
  try {
    const me = config.api.bot_username
      ? { username: config.api.bot_username }
      : await client.users.current().then((user) => ({ id: user.id, username: user.username }));
    botName = me.username;
    let projects: string[];
    if (options.project !== undefined) {
      const missing = await missingProject(client, options.project);
      if (missing !== undefined) {
        io.err(`hookbot plan: ${missing}\n`);
        return 1;
      }
      projects = [options.project];
    } else if (config.hooks.projects.length > 0) projects = [...config.hooks.projects];
    else {
      projects = [];
      for await (const project of client.projects.list({ archived: false }))
        projects.push(project.path_with_namespace);
    }
    const nothing = ruleSet([]);
    for (const project of projects) {
      const sets = { current: current?.byProject(project) ?? nothing, proposed: proposed.byProject(project) };
      const memory = await memoryFor([sets.current, sets.proposed]);
      reports.push(
        await planChange({
          client,
          project,
          ...sets,
          budget: {
            items: config.rules.repository.plan_items,
            apiCalls: config.rules.repository.plan_api_calls,
          },
          bot: me,
          ...(memory?.read ? { queued: memory.entries } : {}),
        }),
      );
    }
  } catch (error) {
    const problem = apiProblem(error, config.api.url);
    if (problem === undefined) throw error;
    io.err(`hookbot plan: ${problem}\n`);
    return 1;
  }

  const against = currentDir ?? 'no rules';
  const queues = reports.some((report) =>
    report.changes.some((change) => change.what.includes('in the merge queue')),
  );
  const memory = await reading;
  const remark = memory && !memory.read && queues ? unreadMemoryRemark(memory.why) : undefined;
  if (format === 'json') {
    io.out(
      `${JSON.stringify({ proposed: proposedDir, current: currentDir ?? null, problems: [], projects: reports, ...(remark ? { remarks: [remark] } : {}) }, null, 2)}\n`,
    );
  } else if (format === 'markdown') {
    const lines = [`### hookbot plan: ${proposedDir} against ${against}`, ''];
    for (const report of reports)
      lines.push(
        `**${report.project}** (${counted(report.evaluated, 'open issue or merge request', 'open issues and merge requests')} evaluated):`,
        '',
        ...planLines(report).map((line) => `- ${line}`),
        '',
      );
    if (remark) lines.push(`_${remark}_`, '');
    io.out(`${lines.join('\n')}\n`);
  } else {
    const lines = [`hookbot plan: ${proposedDir} against ${against}`];
    for (const report of reports)
      lines.push(
        `${report.project}: ${counted(report.evaluated, 'open item')} evaluated`,
        ...planLines(report).map((line) => `  ${line}`),
      );
    if (remark) lines.push(remark);
    io.out(`${lines.join('\n')}\n`);
  }
  return 0;
}

export const registerPlanCommand: RegisterCommand = (program, io, setExitCode) => {
  program
    .command('plan')
    .description(
      'What a rules change would do: the proposed rules against the ones in force, in dry run on every open item (read-only).',
    )
    .option('--rules <dir>', 'the proposed rules folder (default: rules.dir, HOOKBOT_RULES)')
    .option(
      '--current <dir>',
      'the rules in force to compare with; none: no rules (default: rules.dir when --rules names another folder, else none)',
    )
    .option(
      '--project <namespace/project>',
      'only this project (default: hooks.projects, else every project the bot sees)',
    )
    .option('--format <format>', 'text, markdown or json', 'text')
    .option(
      '--config <file>',
      'the configuration file (default: HOOKBOT_CONFIG, else defaults and environment)',
    )
    .action(async (options: PlanOptions) => {
      setExitCode(await runPlanCommand(options, io));
    });
};
