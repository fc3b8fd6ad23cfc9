/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createHooksApi(_http: Http) {
  return {};
}

export type HooksApi = ReturnType<typeof createHooksApi>;
