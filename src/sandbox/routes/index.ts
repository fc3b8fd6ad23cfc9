/** Every resource family's routes, one file each, mounted under `/api/v3`. */
import type { Router } from 'express';
import type { SandboxContext } from '../context.ts';
import { registerBranchRoutes } from './branches.ts';
import { registerCommitRoutes } from './commits.ts';
import { registerFileRoutes } from './files.ts';
import { registerGroupRoutes } from './groups.ts';
import { registerHookRoutes } from './hooks.ts';
import { registerIssueRoutes } from './issues.ts';
import { registerLabelRoutes } from './labels.ts';
import { registerMemberRoutes } from './members.ts';
import { registerMergeRequestVersionRoutes } from './merge-request-versions.ts';
import { registerMergeRequestRoutes } from './merge-requests.ts';
import { registerNoteRoutes } from './notes.ts';
import { registerProjectRoutes } from './projects.ts';
import { registerPushHooks } from './push-hooks.ts';
import { registerRefreshMergeRequests } from '../refresh-merge-requests.ts';
import { registerSettingsRoutes } from './settings.ts';
import { registerStatusRoutes } from './statuses.ts';
import { registerUserRoutes } from './users.ts';

export type RegisterRoutes = (router: Router, ctx: SandboxContext) => void;

export const routeFamilies: RegisterRoutes[] = [
  registerBranchRoutes,
  registerCommitRoutes,
  registerFileRoutes,
  registerStatusRoutes,
  registerPushHooks,
  registerIssueRoutes,
  registerNoteRoutes,
  registerLabelRoutes,
  // Before the merge requests' own push listener: merged-by-push and the refs first, as 8.x does.
  registerRefreshMergeRequests,
  registerMergeRequestRoutes,
  registerMergeRequestVersionRoutes,
  registerUserRoutes,
  registerSettingsRoutes,
  registerProjectRoutes,
  registerMemberRoutes,
  registerGroupRoutes,
  registerHookRoutes,
];
