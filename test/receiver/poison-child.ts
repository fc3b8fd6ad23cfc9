/**
 * Run in a child process by poison-deliveries.test.ts: a bot's pipeline over the state at argv[2]
 * (`file:<path>`, or `postgres:<schema>` on the test database), resuming what the inbox holds. The
 * item run of issue `argv[3]` kills the process (exit 70, without a word or a clean-up, as an out of
 * memory abort does); every other item run appends `issue:<id>` to the file at argv[4]. Once idle it
 * stops cleanly and exits 0. The pipeline's log goes to stderr, one JSON line each.
 */
import { appendFileSync } from 'node:fs';
import { createPipeline } from '../../src/receiver/pipeline.ts';
import { createFileStore, createPostgresStore, type StateStore } from '../../src/state/index.ts';
import { TEST_DATABASE_URL } from '../helpers/postgres.ts';

const [where = '', poison = '', runsFile = ''] = process.argv.slice(2);
const store: StateStore = where.startsWith('postgres:')
  ? // Short leases: what a dead child held is taken over by the next one within a second.
    createPostgresStore({
      url: TEST_DATABASE_URL,
      schema: where.slice('postgres:'.length),
      leaseMs: 500,
      refreshMs: 100,
    })
  : createFileStore({ path: where.slice('file:'.length) });
await store.open();
const line = (level: string) => (obj: object, msg: string) =>
  process.stderr.write(`${JSON.stringify({ level, msg, ...obj })}\n`);
const pipeline = createPipeline({
  store,
  bot: { username: 'hookbot', id: 99 },
  debounceMs: 0,
  resolver: { mergeRequestsForBranch: async () => [], mergeRequestsForCommit: async () => [] },
  log: { info: line('info'), warn: line('warn'), error: line('error') },
  process: async (item) => {
    if (String(item.id) === poison) process.exit(70);
    appendFileSync(runsFile, `${item.type}:${item.id}\n`);
  },
});
store.fleet?.onAdopted(() => pipeline.resume());
pipeline.resume();
// Idle, and (PostgreSQL) nothing left in the fleet's inbox: a dead child's leases run out first.
for (;;) {
  await pipeline.idle();
  if (!store.fleet || (await store.fleet.fleetInbox()) === 0) break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
await pipeline.stop();
await store.close();
process.exit(0);
