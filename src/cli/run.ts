/**
 * Runs the command line and sets the exit code: the entry of the compiled build
 * (`node dist/cli/run.js`, as the Docker image runs it). `bin/hookbot.js` is the entry from the
 * sources (through tsx).
 */
import { main } from './main.ts';

process.exitCode = await main(process.argv.slice(2));
