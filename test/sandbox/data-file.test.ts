/**
 * The data file (`--data FILE`) holds every password and token, and `FILE.repos/` every private
 * project's code: only the sandbox's user may read them (docs/reliability.md#security).
 */
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.ts';

const modeOf = async (file: string) => (await stat(file)).mode & 0o777;

describe('sandbox data file modes', () => {
  let dir: string;
  let previousUmask: number;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'hookbot-sandbox-modes-'));
    // The usual umask, which leaves files 0644 and folders 0755 unless the code asks for less.
    previousUmask = process.umask(0o022);
  });
  afterEach(async () => {
    process.umask(previousUmask);
    await rm(dir, { recursive: true, force: true });
  });

  it('creates the data file 0600 and the folders it makes 0700', async () => {
    const file = path.join(dir, 'data', 'nested', 'sandbox.json');
    const lines: string[] = [];
    const sb = await startSandbox({ dataFile: file, seed: 'demo', log: (line) => lines.push(line) });
    await sb.close();
    expect((await readFile(file, 'utf8')).length).toBeGreaterThan(0);
    expect(await modeOf(file)).toBe(0o600);
    expect(await modeOf(path.join(dir, 'data'))).toBe(0o700);
    expect(await modeOf(path.join(dir, 'data', 'nested'))).toBe(0o700);
    expect(await modeOf(`${file}.repos`)).toBe(0o700);
    expect(lines.filter((line) => /readable|listed/.test(line))).toEqual([]);
  });

  it('narrows a data file and a repositories folder an older version left readable, and says so', async () => {
    const file = path.join(dir, 'sandbox.json');
    await chmod(dir, 0o700);
    const first = await startSandbox({ dataFile: file, adminToken: 'kept-token', log: () => undefined });
    await first.close();
    await chmod(file, 0o644);
    await chmod(`${file}.repos`, 0o755);
    // A temporary file a crash left behind, readable by all: never reused for the next write.
    const temp = path.join(dir, '.sandbox.json.tmp');
    await writeFile(temp, 'stale', { mode: 0o644 });

    const lines: string[] = [];
    const second = await startSandbox({ dataFile: file, log: (line) => lines.push(line) });
    expect(await modeOf(file)).toBe(0o600);
    expect(await modeOf(`${file}.repos`)).toBe(0o700);
    // The data survived the narrowing.
    expect(second.adminToken).toBe('kept-token');
    const res = await fetch(`${second.apiUrl}/projects`, {
      method: 'POST',
      headers: { 'private-token': 'kept-token', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'after-narrowing' }),
    });
    expect(res.status).toBe(201);
    await second.close();
    expect(await modeOf(file)).toBe(0o600);
    expect(JSON.parse(await readFile(file, 'utf8')).projects).toHaveLength(1);
    expect(lines).toEqual([
      `sandbox: ${file} was readable by other users (it holds passwords and tokens): now 0600`,
      `sandbox: ${file}.repos was readable by other users (it holds the repositories): now 0700`,
    ]);
  });

  it('leaves a folder the user made as it is, with a warning when others may list it', async () => {
    const folder = path.join(dir, 'shared');
    await mkdir(folder, { mode: 0o755 });
    await chmod(folder, 0o755);
    const file = path.join(folder, 'sandbox.json');
    const lines: string[] = [];
    const sb = await startSandbox({ dataFile: file, log: (line) => lines.push(line) });
    await sb.close();
    expect(await modeOf(folder)).toBe(0o755);
    expect(await modeOf(file)).toBe(0o600);
    expect(lines).toEqual([
      `sandbox: the folder ${folder} can be listed by other users; the data file is 0600, but chmod 700 the folder to hide its names too`,
    ]);
  });
});
