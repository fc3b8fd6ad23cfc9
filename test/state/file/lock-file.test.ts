/**
 * One writer per state (lock-file.ts): a second process is refused while the first holds the
 * state, and a lock left by a crash (kill -9, reboot, a restarted container reusing the pid) is
 * taken over without anyone deleting it by hand.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireLock, type LockEnvironment } from '../../../src/state/file/lock-file.ts';
import { createFileStore, StateError } from '../../../src/state/index.ts';
import { exited, holdStateInChild } from '../../helpers/hold-state.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { useTempDir } from '../temp-dir.ts';

const dir = useTempDir();
const lockPath = () => join(dir.path, 'hookbot.json.lock');

/** This process as the lock sees it, with the other processes `alive` (pid -> start time) only. */
function env(overrides: Partial<LockEnvironment> = {}, alive: Record<number, number> = {}): LockEnvironment {
  return {
    pid: 100,
    host: 'bot-host',
    boot: 'boot-1',
    startedOf: (pid) => (pid === 100 ? 5000 : alive[pid]),
    isAlive: (pid) => pid === 100 || pid in alive,
    now: () => new Date('2026-11-25T12:00:00.000Z'),
    ...overrides,
  };
}

const holder = (fields: Record<string, unknown>) =>
  writeFile(
    lockPath(),
    JSON.stringify({ host: 'bot-host', boot: 'boot-1', since: '2026-11-24T08:00:00.000Z', ...fields }),
  );

async function refusal(promise: Promise<unknown>): Promise<StateError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StateError);
  return error as StateError;
}

describe('the state lock', () => {
  it('is created naming this process, and removed on release', async () => {
    const lock = await acquireLock(lockPath(), env());
    expect(JSON.parse(await readFile(lockPath(), 'utf8'))).toEqual({
      pid: 100,
      host: 'bot-host',
      boot: 'boot-1',
      started: 5000,
      since: '2026-11-25T12:00:00.000Z',
    });
    await lock.release();
    expect(existsSync(lockPath())).toBe(false);
  });

  it('refuses while a live process on this host holds it, naming it and leaving its lock alone', async () => {
    await holder({ pid: 200, started: 7000 });
    const before = await readFile(lockPath(), 'utf8');
    const error = await refusal(acquireLock(lockPath(), env({}, { 200: 7000 })));
    expect(error.code).toBe('locked');
    expect(error.message).toBe(
      `state ${lockPath()}: in use by process 200 on bot-host (since 2026-11-24T08:00:00.000Z); refusing to open it. One process writes a state at a time: stop that bot first, or give this one its own state (state.path, HOOKBOT_STATE). To read a running bot, ask it: hookbot explain --bot.`,
    );
    expect(await readFile(lockPath(), 'utf8')).toBe(before);
  });

  it.each<{ name: string; fields: Record<string, unknown>; alive: Record<number, number> }>([
    { name: 'its process is gone (kill -9)', fields: { pid: 200, started: 7000 }, alive: {} },
    {
      name: 'its pid now belongs to a later process',
      fields: { pid: 200, started: 7000 },
      alive: { 200: 9000 },
    },
    {
      name: 'the machine rebooted since',
      fields: { pid: 200, started: 7000, boot: 'boot-0' },
      alive: { 200: 7000 },
    },
    {
      name: 'it names our own pid (a restarted container is pid 1 again)',
      fields: { pid: 100, started: 1 },
      alive: {},
    },
  ])('takes a stale lock over when $name', async ({ fields, alive }) => {
    await holder(fields);
    const lock = await acquireLock(lockPath(), env({}, alive));
    expect(JSON.parse(await readFile(lockPath(), 'utf8'))).toMatchObject({ pid: 100, started: 5000 });
    await lock.release();
  });

  it.each([
    { name: 'empty (a crash while writing it)', text: '' },
    { name: 'cut short', text: '{"pid":2' },
    { name: 'not a lock', text: '["x"]' },
  ])('takes over a lock file that is $name', async ({ text }) => {
    await writeFile(lockPath(), text);
    const lock = await acquireLock(lockPath(), env());
    expect(JSON.parse(await readFile(lockPath(), 'utf8'))).toMatchObject({ pid: 100 });
    await lock.release();
  });

  describe('of another host (a container on the same volume), whose pid cannot be checked here', () => {
    const NOW = new Date('2026-11-25T12:00:00.000Z').getTime();
    const otherHost = async (touchedSecondsAgo: number) => {
      await holder({ pid: 1, host: 'old-container', started: 7000 });
      const touched = new Date(NOW - touchedSecondsAgo * 1000);
      await utimes(lockPath(), touched, touched);
    };

    it('is refused while its holder showed life within the stale time, saying when it will not count', async () => {
      await otherHost(15);
      const error = await refusal(acquireLock(lockPath(), env()));
      expect(error.code).toBe('locked');
      expect(error.message).toBe(
        `state ${lockPath()}: in use by process 1 on old-container (since 2026-11-24T08:00:00.000Z); refusing to open it. A process of another host cannot be checked from bot-host; that one last showed life 15 s ago, and its lock counts as stale once it has not for 60 s (from 2026-11-25T12:00:45.000Z): if that bot is gone, start again then, or delete ${lockPath()}.`,
      );
    });

    it('is taken over once its holder has not shown life for the stale time (a killed container)', async () => {
      await otherHost(61);
      const lock = await acquireLock(lockPath(), env());
      expect(JSON.parse(await readFile(lockPath(), 'utf8'))).toMatchObject({ pid: 100, host: 'bot-host' });
      await lock.release();
    });

    it('follows the stale time given', async () => {
      await otherHost(15);
      const lock = await acquireLock(lockPath(), env(), { staleMs: 10_000 });
      await lock.release();
    });
  });

  it('is touched by its holder every heartbeat, and no longer once released', async () => {
    const lock = await acquireLock(lockPath(), env(), { heartbeatMs: 20 });
    const old = new Date('2026-01-01T00:00:00.000Z');
    await utimes(lockPath(), old, old);
    await waitFor(
      async () => ((await stat(lockPath())).mtime.getTime() > old.getTime() ? true : undefined),
      5_000,
      'the heartbeat to touch the lock',
    );
    await lock.release();
    expect(existsSync(lockPath())).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(existsSync(lockPath())).toBe(false);
  });

  it('does not remove a lock that another process took over since', async () => {
    const lock = await acquireLock(lockPath(), env());
    await holder({ pid: 300, started: 1 });
    await lock.release();
    expect(JSON.parse(await readFile(lockPath(), 'utf8'))).toMatchObject({ pid: 300 });
  });
});

describe('the file store and its lock, across processes', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    child = undefined;
  });

  it('refuses a second process while the first has it open, and opens once it closed', async () => {
    const path = join(dir.path, 'hookbot.json');
    child = await holdStateInChild(path);
    const second = createFileStore({ path });
    const error = await refusal(second.open());
    expect(error.code).toBe('locked');
    expect(error.message).toContain(`in use by process ${child.pid} on `);

    const gone = exited(child);
    child.kill('SIGTERM');
    await gone;
    expect(existsSync(`${path}.lock`)).toBe(false);
    await second.open();
    await second.close();
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('opens after the holder was killed with SIGKILL (its lock left behind)', async () => {
    const path = join(dir.path, 'hookbot.json');
    child = await holdStateInChild(path);
    const gone = exited(child);
    child.kill('SIGKILL');
    await gone;
    expect(existsSync(`${path}.lock`)).toBe(true);
    const store = createFileStore({ path });
    await store.open();
    await store.close();
  });

  it('releases the lock when opening is refused for another reason', async () => {
    const path = join(dir.path, 'hookbot.json');
    await writeFile(path, 'not json');
    const store = createFileStore({ path });
    await expect(store.open()).rejects.toThrow(StateError);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });
});
