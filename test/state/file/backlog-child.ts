/**
 * Child process of backlog-heap.test.ts, run with the Docker image's heap flags.
 *   fill <path> <options JSON> <compact on close: true|false>
 *     accepts distinct ~1 MB push deliveries until the inbox refuses one (inbox_full), closes, and
 *     prints {"accepted":n,"inboxBytes":b}
 *   drain <path> <options JSON>
 *     opens the store (the restart), holds every pending delivery's handle at once (as the pipeline's
 *     queue does), reads each body in turn, checks it and marks it processed; prints {"processed":n}
 */
import { createFileStore, StateError, type FileStoreOptions } from '../../../src/state/index.ts';

const [mode, path, optionsJson, compactArg] = process.argv.slice(2);
const options = { ...(JSON.parse(optionsJson ?? '{}') as FileStoreOptions), path };

/** A push of `commits` commits, about 520 bytes each: many small objects, as real pushes are. */
function pushBody(n: number, commits: number): Record<string, unknown> {
  return {
    object_kind: 'push',
    ref: 'refs/heads/main',
    before: '0'.repeat(40),
    after: n.toString(16).padStart(40, '0'),
    project_id: 1,
    total_commits_count: commits,
    commits: Array.from({ length: commits }, (_, i) => ({
      id: `${n.toString(16).padStart(8, '0')}${i.toString(16).padStart(32, '0')}`,
      message: `change ${i} of push ${n}: ${'lorem ipsum '.repeat(12)}`,
      timestamp: '2016-08-12T17:23:21+02:00',
      url: `http://example.com/acme/web/commit/${i}`,
      author: { name: 'Alice Example', email: 'alice@example.com' },
      added: [`src/file-${i}.ts`],
      modified: ['README.md', 'package.json'],
      removed: [],
    })),
  };
}

async function fill(): Promise<void> {
  const store = createFileStore(options);
  await store.open();
  let accepted = 0;
  for (let n = 1; ; n++) {
    const body = pushBody(n, 1_900);
    const bodyJson = Buffer.from(JSON.stringify(body));
    try {
      await store.accept({
        key: `push-${n}`,
        kind: 'push',
        receivedAt: Date.now(),
        headers: { 'x-gitlab-event': 'Push Hook' },
        body,
        bodyJson,
      });
      accepted++;
    } catch (error) {
      if (error instanceof StateError && error.code === 'inbox_full') break;
      throw error;
    }
  }
  const inboxBytes = store.stats().inboxBytes;
  await store.close({ compact: compactArg === 'true' });
  console.log(JSON.stringify({ accepted, inboxBytes }));
}

async function drain(): Promise<void> {
  const store = createFileStore(options);
  await store.open();
  const handles = store.pendingDeliveries();
  let processed = 0;
  for (const delivery of handles) {
    const body = delivery.body as { object_kind?: unknown; commits?: unknown[] };
    if (body.object_kind !== 'push' || body.commits?.length !== 1_900)
      throw new Error(`delivery ${delivery.id} came back different`);
    await store.markProcessed(delivery.id);
    processed++;
  }
  await store.close();
  console.log(JSON.stringify({ processed, heapLimitMb: 256 }));
}

await (mode === 'fill' ? fill() : drain());
