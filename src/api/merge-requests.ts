/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createMergeRequestsApi(_http: Http) {
  return {};
}

export type MergeRequestsApi = ReturnType<typeof createMergeRequestsApi>;
