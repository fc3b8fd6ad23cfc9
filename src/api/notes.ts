/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createNotesApi(_http: Http) {
  return {};
}

export type NotesApi = ReturnType<typeof createNotesApi>;
