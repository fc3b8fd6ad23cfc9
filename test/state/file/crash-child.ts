/**
 * Run by crash.test.ts in a child process: accepts deliveries in bursts for ever, printing each
 * id only after its accept resolved (`A <key> <id>`), and marks every even-numbered one processed
 * (`P <id>` once that resolved). The parent kills it with SIGKILL mid-burst. A small compaction
 * threshold makes the kill land inside compactions too; options given as JSON (a small
 * `dedupFileKeys`) make them write de-dup files as well.
 */
import { createFileStore, type FileStoreOptions } from '../../../src/state/index.ts';

const path = process.argv[2];
if (path === undefined) throw new Error('usage: crash-child.ts <state file> [options as JSON]');
const options = JSON.parse(process.argv[3] ?? '{}') as FileStoreOptions;
const store = createFileStore({ path, compactRecords: 300, ...options });
await store.open();

// Pipes to the parent are synchronous on POSIX: a printed line is out before the next statement.
const print = (line: string) => process.stdout.write(`${line}\n`);
let n = 0;
for (;;) {
  await Promise.all(
    Array.from({ length: 40 }, async () => {
      const i = n++;
      const key = `key-${i}`;
      const { id } = await store.accept({
        key,
        kind: 'Issue Hook',
        receivedAt: Date.now(),
        headers: { 'x-gitlab-event': 'Issue Hook' },
        body: { object_kind: 'issue', i, text: 'x'.repeat(300) },
      });
      print(`A ${key} ${id}`);
      if (i % 2 === 0) {
        await store.markProcessed(id);
        print(`P ${id}`);
      }
    }),
  );
}
