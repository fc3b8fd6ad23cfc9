/**
 * The sandbox the scenarios run against, in this process: a bot user in group `acme` with project
 * `acme/web`, issues created straight in its data (the same records the issue routes create, but
 * without firing hooks: the scenarios deliver hooks themselves, at the pace they choose), and the
 * bot's comments counted per issue straight from `ctx.db.data.notes`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { addGroup, addIssueRecord, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';

export const BOT_USERNAME = 'hookbot';

export interface World {
  sandbox: Sandbox;
  /** The bot user's API token (a secret the bot must never print). */
  botToken: string;
  botUserId: number;
  projectId: number;
  /** A scratch folder: rules, state, configs. Removed by `close()`. */
  dir: string;
  /** Creates `count` open issues in `acme/web` (no hook fires); returns their global ids. */
  addIssues(count: number, title?: (n: number) => string): number[];
  /** Notes by the bot per issue id. */
  botComments(): Map<number, string[]>;
  close(): Promise<void>;
}

export async function createWorld(options: { botToken: string; label: string }): Promise<World> {
  const sandbox = await startSandbox({ seed: 'empty' });
  const { db } = sandbox.ctx;
  const bot = addUser(db, { username: BOT_USERNAME, private_token: options.botToken });
  const group = addGroup(db, {
    name: 'acme',
    owner_id: 1,
    members: [{ user_id: bot.id, access_level: 40 }],
  });
  const project = await addProject(sandbox.ctx, {
    name: 'web',
    namespace_id: group.id,
    creator_id: 1,
    initialFiles: { 'README.md': 'reliability\n' },
  });
  const dir = mkdtempSync(path.join(tmpdir(), `hookbot-reliability-${options.label}-`));

  return {
    sandbox,
    botToken: options.botToken,
    botUserId: bot.id,
    projectId: project.id,
    dir,
    addIssues(count, title = (n) => `Reliability issue ${n}`) {
      const ids: number[] = [];
      for (let n = 0; n < count; n++)
        ids.push(addIssueRecord(db, { project_id: project.id, title: title(n) }).id);
      db.changed();
      return ids;
    },
    botComments() {
      const byIssue = new Map<number, string[]>();
      for (const note of db.data.notes) {
        if (note.author_id !== bot.id || note.noteable_type !== 'Issue' || note.noteable_id === null)
          continue;
        const list = byIssue.get(note.noteable_id) ?? [];
        list.push(note.body);
        byIssue.set(note.noteable_id, list);
      }
      return byIssue;
    },
    async close() {
      await sandbox.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The rule every delivery scenario uses: one comment per issue (its hidden marker makes it once). */
export const COMMENT_RULE = [
  'rules:',
  '  - name: acknowledge',
  '    on: [issue.open, issue.update]',
  "    do: [ { comment: 'seen' } ]",
  '',
].join('\n');

export function writeRules(dir: string, files: Record<string, string>): string {
  const rulesDir = path.join(dir, 'rules');
  mkdirSync(rulesDir, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(rulesDir, name)), { recursive: true });
    writeFileSync(path.join(rulesDir, name), text);
  }
  return rulesDir;
}

/** Exactly-once accounting over the issues that should each carry one comment. */
export interface CommentCount {
  /** Issues with at least one bot comment. */
  processed: number;
  /** Issues with none. */
  lost: number;
  /** Comments beyond the first, summed over the issues. */
  duplicated: number;
  /** Ids of issues with none or with more than one (the first few, for the report). */
  lostIds: number[];
  duplicatedIds: number[];
  /** Bot comments on issues outside the expected set (should be 0). */
  stray: number;
}

export function countComments(world: World, expected: readonly number[]): CommentCount {
  const comments = world.botComments();
  const wanted = new Set(expected);
  const count: CommentCount = {
    processed: 0,
    lost: 0,
    duplicated: 0,
    lostIds: [],
    duplicatedIds: [],
    stray: 0,
  };
  for (const id of expected) {
    const n = comments.get(id)?.length ?? 0;
    if (n === 0) {
      count.lost++;
      if (count.lostIds.length < 20) count.lostIds.push(id);
    } else count.processed++;
    if (n > 1) {
      count.duplicated += n - 1;
      if (count.duplicatedIds.length < 20) count.duplicatedIds.push(id);
    }
  }
  for (const [id, list] of comments) if (!wanted.has(id)) count.stray += list.length;
  return count;
}
