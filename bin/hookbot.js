#!/usr/bin/env node
// Entry point of the `hookbot` command. The sources are TypeScript; tsx compiles them once at load
// (about 0.3 s) so there is no build step between `npm install` and `npm start`. The compiled build
// (`npm run build`, then `node dist/cli/run.js`) is what the Docker image runs.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/run.ts');
