/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createMembersApi(_http: Http) {
  return {};
}

export type MembersApi = ReturnType<typeof createMembersApi>;
