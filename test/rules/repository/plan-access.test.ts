/**
 * What a plan's readers may read (plan-access.ts `audienceOf`), per the 8.x abilities: the project by
 * its visibility or membership, confidential issues by reporters and above, their author and their
 * assignee, merge requests (code and statuses) of a private project by reporters and above; and who
 * they are, read through the API (more over HTTP in test/adversarial/plan.test.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../../src/api/client.ts';
import type { Project } from '../../../src/api/projects.ts';
import {
  audienceOf,
  MAX_PUSHERS,
  readAudience,
  readerText,
  type Reader,
} from '../../../src/rules/repository/plan-access.ts';
import { addGroup, addProject, addUser } from '../../../src/sandbox/factories.ts';
import { useSandbox } from '../../helpers/sandbox.ts';

const PUBLIC = { visibility_level: 20 };
const PRIVATE = { visibility_level: 0 };
const user = (id: number, level: number): Reader => ({ id, username: `u${id}`, level });
const issue = (confidential: boolean | undefined, author = 100, assignee: number | null = null) => ({
  confidential,
  author: { id: author, username: 'a' },
  assignee: assignee === null ? null : { id: assignee, username: 'b' },
});

describe('what the readers of a plan may read', () => {
  it('a non-member of a public project: its issues and merge requests, no confidential issue', () => {
    const audience = audienceOf(PUBLIC, [user(1, 0)]);
    expect(audience.issues).toBe(true);
    expect(audience.mergeRequests).toBe(true);
    expect(audience.mayReadIssue(issue(false))).toBe(true);
    expect(audience.mayReadIssue(issue(true))).toBe(false);
  });

  it('a server that does not say (before 8.6) has no confidential issues', () => {
    expect(audienceOf(PUBLIC, [user(1, 0)]).mayReadIssue(issue(undefined))).toBe(true);
  });

  it('a confidential issue: reporters and above, its author, its assignee', () => {
    expect(audienceOf(PUBLIC, [user(1, 20)]).mayReadIssue(issue(true))).toBe(true);
    expect(audienceOf(PUBLIC, [user(1, 10)]).mayReadIssue(issue(true))).toBe(false);
    expect(audienceOf(PUBLIC, [user(1, 10)]).mayReadIssue(issue(true, 1))).toBe(true);
    expect(audienceOf(PUBLIC, [user(1, 0)]).mayReadIssue(issue(true, 100, 1))).toBe(true);
    // Anyone (a fork whose pushers are not known) has no id: neither author nor assignee.
    expect(audienceOf(PUBLIC, [{ level: 0 }]).mayReadIssue(issue(true, 100, 1))).toBe(false);
  });

  it('several readers: only what every one of them may read', () => {
    const both = audienceOf(PUBLIC, [user(1, 40), user(2, 0)]);
    expect(both.mayReadIssue(issue(true))).toBe(false);
    expect(both.mayReadIssue(issue(true, 2))).toBe(true);
    expect(both.mayReadIssue(issue(false))).toBe(true);
  });

  it('a private project: nothing for a non-member; issues but no merge requests for a guest', () => {
    const outsider = audienceOf(PRIVATE, [user(1, 0)]);
    expect(outsider.issues).toBe('@u1 (not a member) may not read the project');
    expect(outsider.mergeRequests).toBe('@u1 (not a member) may not read the project');
    expect(outsider.mayReadIssue(issue(false))).toBe(false);
    const guest = audienceOf(PRIVATE, [user(1, 10)]);
    expect(guest.issues).toBe(true);
    expect(guest.mergeRequests).toBe(
      '@u1 (guest) may not read the code and the commit statuses of this private project',
    );
    expect(audienceOf(PRIVATE, [user(1, 20)]).mergeRequests).toBe(true);
  });

  it('features turned off', () => {
    const audience = audienceOf({ ...PUBLIC, issues_enabled: false, merge_requests_enabled: false }, [
      user(1, 40),
    ]);
    expect(audience.issues).toBe('the project has no issues');
    expect(audience.mergeRequests).toBe('the project has no merge requests');
  });

  it('readers in words', () => {
    expect(readerText(user(3, 20))).toBe('@u3 (reporter)');
    expect(readerText({ id: 9, level: 50 })).toBe('user 9 (owner)');
    expect(readerText({ level: 0 })).toBe('anyone (not a member)');
  });
});

describe('reading the readers through the API (sandbox over HTTP)', () => {
  const world = useSandbox();
  let project: Project;
  let bot: Client;
  let author = { id: 0, username: '' };
  let authorClient: Client;

  beforeAll(async () => {
    const { sb, db, ctx } = world();
    const botUser = addUser(db, { username: 'pa-bot', private_token: 'pa-bot-token' });
    const authorUser = addUser(db, { username: 'pa-author', private_token: 'pa-author-token' });
    author = { id: authorUser.id, username: authorUser.username };
    const group = addGroup(db, {
      name: 'pa',
      owner_id: 1,
      members: [
        { user_id: botUser.id, access_level: 40 },
        { user_id: authorUser.id, access_level: 20 },
      ],
    });
    const rec = await addProject(ctx, {
      name: 'app',
      namespace_id: group.id,
      creator_id: 1,
      visibility_level: 20,
      initialFiles: { 'README.md': '#\n' },
    });
    bot = createClient({ baseUrl: sb.url, token: 'pa-bot-token', retry: { limit: 0 } });
    authorClient = createClient({ baseUrl: sb.url, token: 'pa-author-token', retry: { limit: 0 } });
    project = await bot.projects.get(rec.id);
  });

  it('the author of a merge request in the project: their level through the group', async () => {
    const audience = await readAudience(bot, project, {
      author,
      source_project_id: project.id,
      project_id: project.id,
    });
    expect(audience.readers).toEqual([{ id: author.id, username: 'pa-author', level: 20 }]);
  });

  it('from a fork the bot may not see: the author and anyone (who may push to it is not known)', async () => {
    const fork = await authorClient.projects.fork(project.id);
    await authorClient.projects.update(fork.id, { visibility_level: 0 });
    const audience = await readAudience(bot, project, {
      author,
      source_project_id: fork.id,
      project_id: project.id,
    });
    expect(audience.readers).toEqual([{ id: author.id, username: 'pa-author', level: 20 }, { level: 0 }]);
    expect(audience.mayReadIssue({ confidential: true, author: { id: 1 }, assignee: null })).toBe(false);
  });

  it(`from a fork with more than ${MAX_PUSHERS} who may push to it: anyone`, async () => {
    const { db } = world();
    const fork = (await authorClient.projects.get(`pa-author/app`)).id;
    await authorClient.projects.update(fork, { visibility_level: 20 });
    for (let n = 0; n < MAX_PUSHERS; n++) {
      const user = addUser(db, { username: `pa-dev-${n}` });
      await authorClient.members.add(fork, user.id, 30);
    }
    const audience = await readAudience(bot, project, {
      author,
      source_project_id: fork,
      project_id: project.id,
    });
    expect(audience.readers.at(-1)).toEqual({ level: 0 });
    expect(audience.readers).toHaveLength(2);
  });
});
