/**
 * The benchmarks' least durable intake (bench/durable-floor.ts): it must do the work it stands for
 * (token, parse, key, one checksummed line per delivery on disk before the 202), or the floor it
 * sets under hookbot would be lower than any real durable intake's.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
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

  it('starts a new segment once one is full and deletes the full one, every line answered on disk', async () => {
    const small = durableFloorServer(path.join(dir, 'small'), 'secret', 200);
    await new Promise<void>((resolve) => small.listen(0, '127.0.0.1', resolve));
    const at = `http://127.0.0.1:${(small.address() as AddressInfo).port}/hooks`;
    try {
      const body = (n: number) => JSON.stringify({ object_kind: 'push', n, pad: 'x'.repeat(100) });
      for (let n = 1; n <= 6; n++) {
        const answer = await fetch(at, {
          method: 'POST',
          headers: { 'x-gitlab-token': 'secret' },
          body: body(n),
        });
        expect(answer.status).toBe(202);
        // The line just answered is in the segment written to now.
        const segments = readdirSync(dir).filter((name) => name.startsWith('small'));
        const current = segments.sort((a, b) => a.length - b.length || a.localeCompare(b)).at(-1) ?? '';
        const lines = readFileSync(path.join(dir, current), 'utf8').split('\n').filter(Boolean);
        expect(JSON.parse(lines.at(-1) ?? '')).toMatchObject({ s: n, b: { n } });
      }
      // Two lines fill a segment: six deliveries made three, and the full ones are deleted.
      await expect
        .poll(() => readdirSync(dir).filter((name) => name.startsWith('small')))
        .toEqual(['small.2']);
    } finally {
      await new Promise<void>((resolve) => small.close(() => resolve()));
    }
  });
});
