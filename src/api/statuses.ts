/** Commit statuses (docs/api-v3.md#commit-statuses): read a commit's build states, post one. */
import { z } from 'zod';
import type { Http } from './http.ts';
import { userSummarySchema, type CallOptions, type ListOptions, type ProjectRef } from './types.ts';

/** The states a status can be posted with (docs/api-v3.md#commit-statuses). */
export const POSTABLE_STATES = ['pending', 'running', 'success', 'failed', 'canceled'] as const;
export type PostableState = (typeof POSTABLE_STATES)[number];

/**
 * The states a listed status can have. docs/api-v3.md#commit-statuses names the five above; real 8.x servers list the
 * builds of a pipeline too, and those can also be `created` (waiting for an earlier stage),
 * `skipped` (8.8+) and `manual` (8.15+). Refusing them would fail the whole listing.
 */
export const STATUS_STATES = [...POSTABLE_STATES, 'created', 'skipped', 'manual'] as const;

export const commitStatusSchema = z.looseObject({
  id: z.number(),
  sha: z.string(),
  ref: z.string().nullable(),
  status: z.enum(STATUS_STATES),
  /** `default` when the poster gave neither `name` nor `context`. */
  name: z.string(),
  target_url: z.string().nullable().optional(),
  description: z.string().nullable().optional(),
  created_at: z.string(),
  started_at: z.string().nullable().optional(),
  finished_at: z.string().nullable().optional(),
  allow_failure: z.boolean(),
  author: userSummarySchema.optional(),
});
export type CommitStatus = z.infer<typeof commitStatusSchema>;

export interface StatusFilter {
  ref_name?: string;
  /** Build stage. */
  stage?: string;
  /** Job name. */
  name?: string;
  /** Every status ever posted (history), not only the latest per name: see `latestByName`. */
  all?: boolean;
}

export interface NewCommitStatus {
  state: PostableState;
  ref?: string;
  /** `name` and `context` are synonyms; the server takes `name`, then `context`, then `default`. */
  name?: string;
  context?: string;
  target_url?: string;
  description?: string;
}

/**
 * How the bot marks a status it posts for a rule of a project's own `.hookbot.yml`: its description
 * starts with this (added by the executor, never by the rule: rules/executor/item-calls.ts). Such a
 * status is the repository's word, not the operator's: with a trust, it never counts
 * (docs/repository-rules.md#statuses).
 */
export const REPOSITORY_STATUS_MARK = '[.hookbot.yml]';

/** The description the bot posts for a repository rule's status: the mark, then the rule's text. */
export function markRepositoryStatus(description: string | undefined): string {
  return description ? `${REPOSITORY_STATUS_MARK} ${description}` : REPOSITORY_STATUS_MARK;
}

const isRepositoryStatus = (description: string | null | undefined): boolean =>
  description?.startsWith(REPOSITORY_STATUS_MARK) ?? false;

/**
 * Whose statuses count. Any developer may post a commit status on 8.x, with any name: a status the
 * rules require (`ci/test`) counts only from the accounts an operator trusts, when they name them.
 */
export interface StatusTrust {
  /** Whether a status posted by `author` with `description` satisfies a requirement. */
  counts(author: string | undefined, description?: string | null): boolean;
  /** Whether `author` is the bot (its marked statuses included, which do not count). */
  isBot(author: string | undefined): boolean;
}

/**
 * `rules.status_authors`: empty, every author counts; otherwise those usernames (any case) and the
 * bot's own (`bot`, known once the bot has asked the server who it is), except the statuses the bot
 * posted for a repository's rule (marked: `REPOSITORY_STATUS_MARK`). Those count as what the
 * repository's developer could post: nothing, the bot's name in the list or not. The mark is
 * judged on the bot's statuses only: anyone else's count by their author alone.
 */
export function statusTrust(
  authors: readonly string[],
  bot: () => string | undefined,
): StatusTrust | undefined {
  if (authors.length === 0) return undefined;
  const trusted = new Set(authors.map((name) => name.toLowerCase()));
  const isBot = (author: string | undefined): boolean => {
    const name = bot();
    return author !== undefined && name !== undefined && author.toLowerCase() === name.toLowerCase();
  };
  return {
    isBot,
    counts: (author, description) =>
      author !== undefined &&
      (isBot(author) ? !isRepositoryStatus(description) : trusted.has(author.toLowerCase())),
  };
}

export function createStatusesApi(http: Http, trust?: StatusTrust) {
  /** A commit's statuses, those `keep` says yes to (all without a trust). */
  function listed(
    project: ProjectRef,
    sha: string,
    filter: StatusFilter,
    options: ListOptions,
    keep: (trust: StatusTrust, status: CommitStatus) => boolean,
  ): AsyncIterable<CommitStatus> {
    // With a trust, the whole history is read and the latest of each name is taken among the
    // statuses that count: the server's own latest may be someone else's newer post, which would
    // hide the trusted account's (a developer's `ci/test` posted over the CI's, red team of issue 36:
    // the CI's status then stayed missing until it posted a new row, never passed on her word, but
    // held back by it). Asked for `all`, every status that counts.
    const listing = http.paginate({
      method: 'GET',
      route: '/projects/:id/repository/commits/:sha/statuses',
      params: { id: project, sha },
      query: trust ? { ...filter, all: true } : { ...filter },
      schema: commitStatusSchema,
      ...options,
    });
    if (!trust) return listing;
    const whole = filter.all === true;
    return (async function* () {
      const kept: CommitStatus[] = [];
      for await (const status of listing)
        if (keep(trust, status)) {
          if (whole) yield status;
          else kept.push(status);
        }
      if (!whole) yield* latestByName(kept);
    })();
  }
  const counts = (given: StatusTrust, status: CommitStatus): boolean =>
    given.counts(status.author?.username, status.description);

  return {
    /**
     * A commit's statuses (the latest per name unless `all`). With a `trust`, statuses posted by
     * others are left out, and the bot's own posted for a repository's rule: a status the rules
     * require and nobody trusted posted is then missing, as it should be, never passed; the latest
     * of a name is the latest that counts, so an untrusted newer post hides nothing.
     */
    list(
      project: ProjectRef,
      sha: string,
      filter: StatusFilter = {},
      options: ListOptions = {},
    ): AsyncIterable<CommitStatus> {
      return listed(project, sha, filter, options, counts);
    },

    /**
     * What counts (as `list`) and the bot's own statuses that do not (a repository rule's, marked):
     * what the executor reads before it posts a status, so that one already standing is not posted
     * again, whoever it counts for. Never read to decide a requirement.
     */
    listWithOwn(
      project: ProjectRef,
      sha: string,
      filter: StatusFilter = {},
      options: ListOptions = {},
    ): AsyncIterable<CommitStatus> {
      return listed(
        project,
        sha,
        filter,
        options,
        (given, status) => counts(given, status) || given.isBot(status.author?.username),
      );
    },

    /**
     * Posts a status. Left non-idempotent (never retried) although a pending or running status of
     * the same name, ref and sha is updated in place: a finished one never changes, so a repeat
     * makes a second row, and posting `pending` onto a pending status is a 400 on real servers.
     */
    create(
      project: ProjectRef,
      sha: string,
      status: NewCommitStatus,
      options: CallOptions = {},
    ): Promise<CommitStatus> {
      return http.request({
        method: 'POST',
        route: '/projects/:id/statuses/:sha',
        params: { id: project, sha },
        body: { ...status },
        schema: commitStatusSchema,
        ...options,
      });
    },
  };
}

type StatusLike = Pick<CommitStatus, 'id' | 'name' | 'created_at'>;

/**
 * The newest status of each name, in the order the names first appear. `all=true` answers the
 * whole history; ids grow with every new row, so the higher id is the newer one, and
 * `created_at` only decides between equal ids.
 */
export function latestByName<T extends StatusLike>(statuses: Iterable<T>): T[] {
  const latest = new Map<string, T>();
  for (const status of statuses) {
    const kept = latest.get(status.name);
    if (kept === undefined || isNewer(status, kept)) latest.set(status.name, status);
  }
  return [...latest.values()];
}

function isNewer(a: StatusLike, b: StatusLike): boolean {
  if (a.id !== b.id) return a.id > b.id;
  return Date.parse(a.created_at) > Date.parse(b.created_at);
}
