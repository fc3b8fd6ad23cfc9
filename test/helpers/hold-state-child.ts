/**
 * Run in a child process by hold-state.ts: opens the state store at argv[2], prints `OPEN`, and
 * holds it until killed (SIGTERM closes it cleanly; SIGKILL leaves the lock behind, as a crash does).
 */
import { createFileStore } from '../../src/state/index.ts';

const path = process.argv[2];
if (path === undefined) throw new Error('usage: hold-state-child.ts <state file>');
const store = createFileStore({ path });
await store.open();
process.on('SIGTERM', () => void store.close().then(() => process.exit(0)));
process.stdout.write('OPEN\n');
setInterval(() => undefined, 60_000);
