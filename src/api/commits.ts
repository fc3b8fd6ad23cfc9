/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createCommitsApi(_http: Http) {
  return {};
}

export type CommitsApi = ReturnType<typeof createCommitsApi>;
