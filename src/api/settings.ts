/** PLACEHOLDER: being written (see the issue); replaced by the real resource family. */
import type { Http } from './http.ts';

export function createSettingsApi(_http: Http) {
  return {};
}

export type SettingsApi = ReturnType<typeof createSettingsApi>;
