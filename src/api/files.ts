/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createFilesApi(_http: Http) {
  return {};
}

export type FilesApi = ReturnType<typeof createFilesApi>;
