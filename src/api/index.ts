export * from './client.ts';
export * from './errors.ts';
export * from './http.ts';
export * from './types.ts';
export type { Issue, IssueEdit, IssueFilter, NewIssue, ProjectIssueFilter } from './issues.ts';
