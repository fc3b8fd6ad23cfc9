/**
 * The least a durable intake can do per delivery, on node:http, for the benchmarks to set hookbot
 * and Probot against what the machine allows: check the token, parse the body, key it (SHA-256),
 * refuse a key seen before, append one checksummed line holding the body's bytes as received, and
 * answer 202 only once an fdatasync covering that line returned. Lines arriving while a sync is in
 * flight go together in the next one (group commit, one writev each). Nothing else: no bounds, no
 * expiry of keys, no compaction, no state beyond the keys, no way to read anything back. A real store
 * needs all of those, so no real one gets below this server's CPU per delivery on the same machine.
 *
 * The journal goes in segments of `segmentBytes` (8 MiB by default, hookbot's compaction threshold),
 * and a full one is deleted once the next write starts a new one: a real store folds a segment into
 * its document and then deletes it, and deleting alone costs less. Appending to one file that never
 * stops growing is no floor: measured on this kind of machine (ext4), it cost about 10 µs more per
 * delivery (48 against 38), in the kernel's write path (docs/benchmarks.md).
 */
import { close, fdatasync, openSync, unlink, writevSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { hash, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const DEFAULT_SEGMENT_BYTES = 8 * 1024 * 1024;

/**
 * The first segment is `journalPath`, the next ones `journalPath.1`, `.2`, ...; only the one written
 * to now stays on disk.
 */
export function durableFloorServer(
  journalPath: string,
  token: string,
  segmentBytes = DEFAULT_SEGMENT_BYTES,
): Server {
  let segment = 0;
  let segmentPath = journalPath;
  let fd = openSync(segmentPath, 'a', 0o600);
  let written = 0;
  const expected = hash('sha256', token, 'buffer');
  const keys = new Set<string>();
  let seq = 0;
  let pending: Buffer[] = [];
  let waiting: (() => void)[] = [];
  let syncing = false;
  let scheduled = false;

  const flush = (): void => {
    scheduled = false;
    if (syncing || pending.length === 0) return;
    syncing = true;
    const done = waiting;
    // Between two syncs: every line of the full segment is durable, so it can go (in the background).
    if (written >= segmentBytes) {
      const [full, fullPath] = [fd, segmentPath];
      segmentPath = `${journalPath}.${++segment}`;
      fd = openSync(segmentPath, 'a', 0o600);
      written = 0;
      close(full, () => unlink(fullPath, () => undefined));
    }
    written += writevSync(fd, pending);
    pending = [];
    waiting = [];
    fdatasync(fd, (error) => {
      if (error) throw error; // a failed sync: nothing may be acknowledged any more
      syncing = false;
      for (const answer of done) answer();
      flush();
    });
  };
  const append = (parts: Buffer[], answer: () => void): void => {
    for (const part of parts) pending.push(part);
    waiting.push(answer);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };

  return createServer((req, res) => {
    const given = req.headers['x-gitlab-token'];
    if (typeof given !== 'string' || !timingSafeEqual(hash('sha256', given, 'buffer'), expected)) {
      res.writeHead(401, { connection: 'close' }).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      let kind: unknown;
      try {
        kind = (JSON.parse(raw.toString('utf8')) as { object_kind?: unknown }).object_kind;
      } catch {
        res.writeHead(400).end();
        return;
      }
      const key = hash('sha256', raw, 'hex');
      if (keys.has(key)) {
        res.writeHead(202, { 'content-type': 'application/json' }).end('{"message":"duplicate"}');
        return;
      }
      keys.add(key);
      const id = ++seq;
      const head = Buffer.from(`{"c":"00000000","s":${id},"k":${JSON.stringify(kind)},"b":`);
      const tail = Buffer.from('}\n');
      // The checksum covers what follows `{"c":"<8 hex>",` up to the newline, as the journal's does.
      const crc = crc32(tail.subarray(0, 1), crc32(raw, crc32(head.subarray(16))));
      head.write(crc.toString(16).padStart(8, '0'), 6, 'latin1');
      append([head, raw, tail], () => {
        const json = `{"message":"accepted","id":"${id}"}`;
        res.writeHead(202, { 'content-type': 'application/json', 'content-length': json.length }).end(json);
      });
    });
  });
}
