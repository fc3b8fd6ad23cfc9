/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createBranchesApi(_http: Http) {
  return {};
}

export type BranchesApi = ReturnType<typeof createBranchesApi>;
