/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createProjectsApi(_http: Http) {
  return {};
}

export type ProjectsApi = ReturnType<typeof createProjectsApi>;
