/**
 * The typed v3 client: one object per resource family, all sharing one HTTP core (auth, sudo,
 * retries, timeouts, concurrency, error mapping, call logging). Actions in the bot depend on the
 * narrowest slice they need, e.g. `Pick<Client['issues'], 'get' | 'update'>`.
 */
import { createHttp, type Http, type HttpOptions } from './http.ts';
import { createBranchesApi } from './branches.ts';
import { createCommitsApi } from './commits.ts';
import { createFilesApi } from './files.ts';
import { createHooksApi } from './hooks.ts';
import { createIssuesApi } from './issues.ts';
import { createLabelsApi } from './labels.ts';
import { createMembersApi } from './members.ts';
import { createMergeRequestsApi } from './merge-requests.ts';
import { createNotesApi } from './notes.ts';
import { createProjectsApi } from './projects.ts';
import { createSettingsApi } from './settings.ts';
import { createStatusesApi, type StatusTrust } from './statuses.ts';
import { createUsersApi } from './users.ts';

export interface ClientOptions extends HttpOptions {
  /** Whose commit statuses the client lists (statuses.ts `statusTrust`); all when absent. */
  statusTrust?: StatusTrust;
}

export function createClient(options: ClientOptions) {
  const http = createHttp(options);
  return clientOver(http, options.statusTrust);
}

/** The resource families over an existing HTTP core (tests pass one with a recorder). */
export function clientOver(http: Http, statusTrust?: StatusTrust) {
  return {
    http,
    /** Carried by wrappers that build a client over the same core (a read-only one). */
    statusTrust,
    users: createUsersApi(http),
    projects: createProjectsApi(http),
    members: createMembersApi(http),
    hooks: createHooksApi(http),
    branches: createBranchesApi(http),
    files: createFilesApi(http),
    commits: createCommitsApi(http),
    statuses: createStatusesApi(http, statusTrust),
    issues: createIssuesApi(http),
    mergeRequests: createMergeRequestsApi(http),
    notes: createNotesApi(http),
    labels: createLabelsApi(http),
    settings: createSettingsApi(http),
  };
}

export type Client = ReturnType<typeof clientOver>;
