#!/usr/bin/env node
// Entry point of the `hookbot` command. The sources are TypeScript; tsx compiles them once at load
// (about 0.3 s) so there is no build step between `npm install` and `npm start`. The compiled build
// (`npm run build`, then `node dist/cli/run.js`) is what the Docker image runs. No process is
// started here (tsx registers its loader in this one): the bot runs in this process, so the pid
// `hookbot start` prints is this one's, and SIGHUP, SIGINT and SIGTERM reach the bot directly, with
// nothing to forward. Under `npm start`, npm and its shell stand between (docs/cli.md).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/run.ts');
