/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createUsersApi(_http: Http) {
  return {};
}

export type UsersApi = ReturnType<typeof createUsersApi>;
