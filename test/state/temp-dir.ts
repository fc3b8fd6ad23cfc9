/** A fresh folder per test under the OS temp folder, removed afterwards. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';

export function useTempDir(): { readonly path: string } {
  const dir = { path: '' };
  beforeEach(async () => {
    dir.path = await mkdtemp(join(tmpdir(), 'hookbot-state-'));
  });
  afterEach(async () => {
    await rm(dir.path, { recursive: true, force: true });
  });
  return dir;
}

/** A clock the test moves by hand. */
export interface FakeClock {
  now: number;
  read: () => number;
}

export function fakeClock(start = Date.UTC(2016, 7, 12, 15, 23, 28)): FakeClock {
  const clock: FakeClock = { now: start, read: () => clock.now };
  return clock;
}
