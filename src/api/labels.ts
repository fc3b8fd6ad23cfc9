/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createLabelsApi(_http: Http) {
  return {};
}

export type LabelsApi = ReturnType<typeof createLabelsApi>;
