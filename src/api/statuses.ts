/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createStatusesApi(_http: Http) {
  return {};
}

export type StatusesApi = ReturnType<typeof createStatusesApi>;
