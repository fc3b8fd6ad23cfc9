/** PLACEHOLDER: hook deliveries are being written (issue 3). */
import type { Db } from './db.ts';
import type { HookDispatcher } from './context.ts';

export function createHookDispatcher(_db: Db, _options: { timeoutMs?: number } = {}): HookDispatcher {
  return {
    emit: () => undefined,
    idle: async () => undefined,
    recent: () => [],
    close: async () => undefined,
  };
}
