/**
 * What the `serve` banner warns of at start (issue 37): a merge train in force (a `queue` rule with
 * `depth` or `batch` above 1) while no git credentials are configured. The train builds each car with
 * git and lands it by a push, so without credentials nothing in it ever lands; before, the reason was
 * only in the sweep's log lines, while the status page showed every entry waiting for a car.
 */
import type { TrainUse } from '../rules/index.ts';

/** The bot's git settings that make a push possible (config `git`, password_file already read). */
interface GitSettings {
  password?: string | undefined;
  ssh_key_file?: string | undefined;
}

export const hasGitCredentials = (git: GitSettings): boolean => Boolean(git.password || git.ssh_key_file);

/** The warning's lines (none when no train is in force, or when credentials are configured). */
export function trainWithoutGitLines(trains: readonly TrainUse[], git: GitSettings): string[] {
  if (trains.length === 0 || hasGitCredentials(git)) return [];
  return [
    `  warning: no git credentials are configured, and the rules in force have a merge train: it cannot build or push a car, so nothing queued in it will land`,
    ...trains.map(
      (train) =>
        `    ${train.file}:${train.line}:${train.column}: rule "${train.rule}" queues in "${train.queue}" with depth ${train.depth}, batch ${train.batch}`,
    ),
    `    configure the bot user's: git.password (HOOKBOT_GIT_PASSWORD, or git.password_file) with its password or a personal access token, or git.ssh_key_file (HOOKBOT_GIT_SSH_KEY_FILE); docs/merge-queue.md#git-credentials`,
  ];
}

/**
 * The trains of the central rules folder, when it is in force (a folder with problems is refused, so
 * none of its trains runs).
 */
export async function trainsInForce(dir: string): Promise<TrainUse[]> {
  const { loadRules, readRuleFolder, trainUses } = await import('../rules/index.ts');
  if ((await loadRules(dir)).problems.length > 0) return [];
  const folder = await readRuleFolder(dir);
  return [...folder.files.values()].flatMap(trainUses);
}
