/**
 * Poison deliveries (issue 28, item 5): a delivery whose processing kills the process (a heap run
 * out on a 200 MB file) was replayed at every start and killed it again, four times, until the merge
 * request was closed. Here a real child process (poison-child.ts) runs the pipeline over the state
 * and dies in the item run of one delivery; it is started again until it exits by itself. The
 * delivery is tried alone twice more, then parked with the reason; the deliveries in flight beside
 * it are processed, never parked for it; the process stays up. With the state file and PostgreSQL.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createFileStore, createPostgresStore, type StateStore } from '../../src/state/index.ts';
import { fixture } from '../events/fixtures.ts';
import { postgresAvailable, TEST_DATABASE_URL, useTestSchemas } from '../helpers/postgres.ts';
import { useTempDir } from '../state/temp-dir.ts';

const dir = useTempDir();
const schema = useTestSchemas();

const POISON = 666;
const CHILD = fileURLToPath(new URL('./poison-child.ts', import.meta.url));

interface Backend {
  /** The child's argument. */
  where: string;
  open(): StateStore;
}

const backends: [string, () => Backend][] = [
  [
    'state file',
    () => {
      const path = join(dir.path, 'state', 'hookbot.json');
      return { where: `file:${path}`, open: () => createFileStore({ path }) };
    },
  ],
  ...(postgresAvailable
    ? [
        [
          'PostgreSQL',
          () => {
            const name = schema();
            return {
              where: `postgres:${name}`,
              open: () => createPostgresStore({ url: TEST_DATABASE_URL, schema: name, leaseMs: 500 }),
            };
          },
        ] as [string, () => Backend],
      ]
    : []),
];

/** One run of the child to its end: its exit code and its log lines. */
function runChild(where: string, runs: string): Promise<{ code: number | null; log: object[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, where, String(POISON), runs], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      const log = err
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as object);
      resolve({ code, log });
    });
  });
}

const issueHook = (id: number) => {
  const body = fixture('issue.json');
  body.object_attributes.id = id;
  body.object_attributes.iid = id;
  return body;
};

describe.each(backends)('%s: a delivery that kills the process', (_name, backend) => {
  it('is tried alone twice more, then parked with the reason; the others are processed; the bot stays up', async () => {
    const { where, open } = backend();
    const runs = join(dir.path, 'runs.txt');
    // Three deliveries accepted before the process starts: the middle one kills it.
    const store = open();
    await store.open();
    const ids: number[] = [1, POISON, 3];
    const accepted: string[] = [];
    for (const id of ids)
      accepted.push(
        (
          await store.accept({
            key: `issue-${id}`,
            kind: 'issue',
            receivedAt: Date.now(),
            headers: {},
            body: issueHook(id),
          })
        ).id,
      );
    await store.close();

    const codes: (number | null)[] = [];
    const logs: object[] = [];
    // Bounded: a crash loop would exit 70 every time; the fifth start is past the design.
    for (let start = 0; start < 5; start++) {
      const { code, log } = await runChild(where, runs);
      codes.push(code);
      logs.push(...log);
      if (code === 0) break;
    }
    // The first start dies with it in flight; the second and third run it alone and die (one death
    // alone may be a kill from outside); the fourth parks it.
    expect(codes).toEqual([70, 70, 70, 0]);

    const after = open();
    await after.open();
    try {
      expect(after.pending()).toEqual([]);
      expect(after.parkedDeliveries()).toEqual([
        expect.objectContaining({
          id: accepted[1],
          key: `issue-${POISON}`,
          kind: 'issue',
          attempts: 4,
          reason:
            'the process stopped during each of its last 3 attempts (it may be what stops it): parked, not tried again',
        }),
      ]);
      // Its de-dup key stays: the same body redelivered is a duplicate, not a new crash.
      expect(
        (
          await after.accept({
            key: `issue-${POISON}`,
            kind: 'issue',
            receivedAt: Date.now(),
            headers: {},
            body: issueHook(POISON),
          })
        ).duplicate,
      ).toBe(true);
    } finally {
      await after.close();
    }
    const processed = new Set(readFileSync(runs, 'utf8').trim().split('\n'));
    expect(processed).toEqual(new Set(['issue:1', 'issue:3']));
    expect(logs).toContainEqual(
      expect.objectContaining({
        level: 'error',
        delivery: accepted[1],
        msg: 'delivery parked: the process stopped during each of its last 3 attempts (it may be what stops it): parked, not tried again',
      }),
    );
    // Four child processes, each loading TypeScript through tsx: seconds each on a busy machine.
  }, 60_000);
});
