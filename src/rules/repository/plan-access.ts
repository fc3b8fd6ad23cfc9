/**
 * Who the plan of a merge request's `.hookbot.yml` is for, and what they may read (issue 28: a fork's
 * rules rendered the titles of confidential issues into the plan, which the bot computes with its own
 * token). The plan evaluates only the items every one of its readers may read; the rest is not
 * evaluated at all, so a condition on it cannot be used as a yes/no oracle either.
 *
 * The readers are the merge request's author, and for a merge request from a fork everyone who may
 * push to the fork (its owner, its developers and masters, and those of its group): whoever wrote the
 * file on the source branch is one of them. Their access to the project is read through the API
 * (the bot has no sudo): the owner of a personal project, `GET /projects/:id/members/:user_id`, and
 * the members of the project's group (`GET /groups/:id/members`). What the API does not show (an
 * access through a group the project is shared with, administrators) counts as no access: the plan
 * then shows less, never more.
 *
 * What each may read follows the 8.x abilities: a public or internal project is readable by anyone
 * logged in, a private one by its members; an issue when issues are on; a confidential issue by
 * reporters and above, its author and its assignee; merge requests, whose evaluation reads code and
 * commit statuses, in a public or internal project by anyone, in a private one by reporters and above.
 */
import { ApiError, type Client, type MergeRequest, type Project } from '../../api/index.ts';

const GUEST = 10;
const REPORTER = 20;
const DEVELOPER = 30;
const OWNER = 50;
const INTERNAL = 10;

/** Most people who may push to a fork named as readers; beyond, the plan is for anyone (no access). */
export const MAX_PUSHERS = 20;
/** Most members of a group read when looking for someone in it; beyond, they count as not in it. */
export const MAX_GROUP_MEMBERS = 2000;

/** One reader: a user (with their access to the project), or anyone logged in (`id` absent, no access). */
export interface Reader {
  id?: number;
  username?: string;
  /** Access level in the project: 0 none, 10 guest, 20 reporter, 30 developer, 40 master, 50 owner. */
  level: number;
}

/** What decides whether an issue may be read, beyond the project. */
export interface IssueAccess {
  confidential?: boolean | undefined;
  author: { id: number };
  assignee: { id: number } | null;
}

export interface PlanAudience {
  readers: Reader[];
  /** Whether the issues are evaluated, or why not (in words). */
  issues: true | string;
  /** Whether the merge requests are evaluated, or why not (in words). */
  mergeRequests: true | string;
  /** Whether every reader may read this issue (the issues being readable at all is `issues`). */
  mayReadIssue(issue: IssueAccess): boolean;
}

const LEVEL_NAMES: Record<number, string> = {
  0: 'not a member',
  10: 'guest',
  20: 'reporter',
  30: 'developer',
  40: 'master',
  50: 'owner',
};

/** `@alice (reporter)`, `anyone (not a member)`. */
export function readerText(reader: Reader): string {
  const role = LEVEL_NAMES[reader.level] ?? `access level ${reader.level}`;
  const who = reader.username
    ? `@${reader.username}`
    : reader.id !== undefined
      ? `user ${reader.id}`
      : 'anyone';
  return `${who} (${role})`;
}

type ProjectAccess = Pick<Project, 'visibility_level' | 'issues_enabled' | 'merge_requests_enabled'>;

const readsProject = (project: ProjectAccess, reader: Reader): boolean =>
  project.visibility_level >= INTERNAL || reader.level >= GUEST;

/** The audience of a plan on `project`, from its readers' access (pure: the reads are done). */
export function audienceOf(project: ProjectAccess, readers: Reader[]): PlanAudience {
  const noProject = readers.find((reader) => !readsProject(project, reader));
  const issues: true | string = noProject
    ? `${readerText(noProject)} may not read the project`
    : project.issues_enabled === false
      ? 'the project has no issues'
      : true;
  const noCode = readers.find((reader) => project.visibility_level < INTERNAL && reader.level < REPORTER);
  const mergeRequests: true | string = noProject
    ? issues
    : project.merge_requests_enabled === false
      ? 'the project has no merge requests'
      : noCode
        ? `${readerText(noCode)} may not read the code and the commit statuses of this private project`
        : true;
  return {
    readers,
    issues,
    mergeRequests,
    mayReadIssue(issue) {
      if (issues !== true) return false;
      // Servers before 8.6 have no confidential issues and do not send the field.
      if (issue.confidential !== true) return true;
      return readers.every(
        (reader) =>
          reader.level >= REPORTER ||
          (reader.id !== undefined && (issue.author.id === reader.id || issue.assignee?.id === reader.id)),
      );
    },
  };
}

export type AudienceClient = Pick<Client, 'projects' | 'members'>;

const isRefusal = (error: unknown): boolean =>
  error instanceof ApiError && (error.status === 403 || error.status === 404);

/**
 * Reads the access of the merge request's author (and, from a fork, of those who may push to it) to
 * `project`, the merge request's target. Every read goes through `client`, so the plan's budget
 * counts them.
 */
export async function readAudience(
  client: AudienceClient,
  project: Project,
  mr: { author: { id: number; username: string } } & Pick<MergeRequest, 'source_project_id' | 'project_id'>,
): Promise<PlanAudience> {
  interface Member {
    level: number;
    username: string;
  }
  const groups = new Map<number, Map<number, Member>>();

  /** A group's members (the first MAX_GROUP_MEMBERS); none when it cannot be read or is no group. */
  async function groupMembers(group: number): Promise<Map<number, Member>> {
    const known = groups.get(group);
    if (known) return known;
    const members = new Map<number, Member>();
    try {
      for await (const member of client.members.listGroup(group, { perPage: 100 })) {
        members.set(member.id, { level: member.access_level, username: member.username });
        if (members.size >= MAX_GROUP_MEMBERS) break;
      }
    } catch (error) {
      // A personal namespace is no group (404); a group the bot may not see gives nobody access.
      if (!isRefusal(error)) throw error;
    }
    groups.set(group, members);
    return members;
  }

  async function levelIn(target: Project, userId: number): Promise<number> {
    if (target.owner?.id === userId) return OWNER;
    let level = 0;
    try {
      level = (await client.members.get(target.id, userId)).access_level;
    } catch (error) {
      if (!isRefusal(error)) throw error;
    }
    if (!target.owner)
      level = Math.max(level, (await groupMembers(target.namespace.id)).get(userId)?.level ?? 0);
    return level;
  }

  /** Who may push to the fork: its owner, its developers and masters, and those of its group. */
  async function forkPushers(fork: number): Promise<Map<number, string | undefined> | undefined> {
    let source: Project;
    try {
      source = await client.projects.get(fork);
    } catch (error) {
      // A fork the bot may not see (or one that is gone): who may push to it is not known.
      if (isRefusal(error)) return undefined;
      throw error;
    }
    const found = new Map<number, string | undefined>();
    const add = (id: number, username: string | undefined): boolean => {
      found.set(id, username ?? found.get(id));
      return found.size <= MAX_PUSHERS;
    };
    // The project answer names the owner without a username; the members list has it.
    if (source.owner && !add(source.owner.id, undefined)) return undefined;
    try {
      for await (const member of client.members.list(source.id, {}, { perPage: 100 }))
        if (member.access_level >= DEVELOPER && !add(member.id, member.username)) return undefined;
    } catch (error) {
      if (isRefusal(error)) return undefined;
      throw error;
    }
    if (!source.owner)
      for (const [id, member] of await groupMembers(source.namespace.id))
        if (member.level >= DEVELOPER && !add(id, member.username)) return undefined;
    return found;
  }

  const people = new Map<number, string | undefined>([[mr.author.id, mr.author.username]]);
  let anyone = false;
  if (mr.source_project_id !== mr.project_id) {
    const pushers = await forkPushers(mr.source_project_id);
    if (pushers === undefined) anyone = true;
    else for (const [id, username] of pushers) people.set(id, people.get(id) ?? username);
  }
  const readers: Reader[] = [];
  for (const [id, username] of people) {
    const reader: Reader = { id, level: await levelIn(project, id) };
    if (username) reader.username = username;
    readers.push(reader);
  }
  if (anyone) readers.push({ level: 0 });
  return audienceOf(project, readers);
}
