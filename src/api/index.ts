/**
 * The API client, seen from outside: the client of the REST API v3 (one file per resource family) and its errors. Outside code imports only this file (eslint enforces it).
 */
export { accessLevel, type AccessProject } from './access.ts';
export { clientOver, createClient, type Client, type ClientOptions } from './client.ts';
export { ApiError, redactSecrets } from './errors.ts';
export { fileText, type RepositoryFile } from './files.ts';
export { type HookSettings, type ProjectHook } from './hooks.ts';
export { createHttp, type Http, type RequestSpec } from './http.ts';
export { refuseWrites } from './read-only.ts';
export { type Issue } from './issues.ts';
export { type MergeOutcome, type MergeRequest } from './merge-requests.ts';
export { type Note } from './notes.ts';
export { type Project } from './projects.ts';
export { isOpenState } from './types.ts';
export { latestByName, markRepositoryStatus, statusTrust } from './statuses.ts';
