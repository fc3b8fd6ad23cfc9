/**
 * A PostgreSQL server of the test's own, from the machine's PostgreSQL binaries (Debian's
 * postgresql-15 puts them in /usr/lib/postgresql/<version>/bin): a fresh cluster in a temporary
 * folder, trust authentication, listening on 127.0.0.1 at a free port. The shared server at
 * 127.0.0.1:5432 serves every other test on the machine, so a test that must restart the database
 * for real (the replicas scenario) restarts this one instead.
 *
 * initdb refuses to run as root: as root, the cluster is made and run as the `postgres` user.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  /** Stops the server as a crash would (`-m immediate`: no checkpoint, WAL recovery at start), then starts it again. */
  crashRestart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** The folder of initdb and pg_ctl, the newest version installed; undefined when there is none. */
export function postgresBinaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(root, versions[0], 'bin');
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinaries();
  if (bin === undefined)
    throw new Error('no PostgreSQL binaries in /usr/lib/postgresql/*/bin (install postgresql-15)');
  const asRoot = userInfo().uid === 0;
  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-pg-'));
  const data = path.join(dir, 'data');
  let owner: { uid: number; gid: number } | undefined;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    owner = { uid: Number(stdout.trim()), gid: Number(gid.trim()) };
    chownSync(dir, owner.uid, owner.gid);
  }
  const as = (command: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', path.join(bin, command), ...args])
      : run(path.join(bin, command), args);
  await as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`;
  const start = () =>
    as('pg_ctl', ['start', '-D', data, '-w', '-t', '60', '-l', path.join(dir, 'log'), '-o', options]);
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async crashRestart(downMs = 1_000) {
      await as('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w']);
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await start();
    },
    async stop() {
      await as('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
