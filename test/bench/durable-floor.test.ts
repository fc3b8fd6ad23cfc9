/**
 * The benchmarks' least durable intake (bench/durable-floor.ts): it must do the work it stands for
 * (token, parse, key, one checksummed line per delivery on disk before the 202), or the floor it
 * sets under hookbot would be lower than any real durable intake's.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { durableFloorServer } from '../../bench/durable-floor.ts';

let dir: string;
let server: Server;
let url: string;

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'hookbot-durable-floor-'));
  server = durableFloorServer(path.join(dir, 'journal'), 'secret');
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
});
afterEach(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

const post = (body: string, token = 'secret') =>
  fetch(url, { method: 'POST', headers: { 'x-gitlab-token': token }, body });

describe('durable floor server', () => {
  it('refuses a wrong token and a body that is not JSON', async () => {
    expect((await post('{"object_kind":"push"}', 'wrong')).status).toBe(401);
    expect((await post('{not json')).status).toBe(400);
  });

  it('has each delivery on disk, checksummed, when it answers 202, and stores a copy once', async () => {
    const body = '{"object_kind":"merge_request","title":"é"}';
    const first = await post(body);
    expect(first.status).toBe(202);
    expect(await first.json()).toEqual({ message: 'accepted', id: '1' });

    const lines = readFileSync(path.join(dir, 'journal'), 'utf8').split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    expect(JSON.parse(line)).toMatchObject({ s: 1, k: 'merge_request', b: JSON.parse(body) });
    const checked = Buffer.from(line, 'utf8').subarray(16);
    expect(line.slice(6, 14)).toBe(crc32(checked).toString(16).padStart(8, '0'));

    const again = await post(body);
    expect(await again.json()).toEqual({ message: 'duplicate' });
    expect(readFileSync(path.join(dir, 'journal'), 'utf8').split('\n').filter(Boolean)).toHaveLength(1);
  });
});
