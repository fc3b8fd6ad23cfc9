#!/usr/bin/env node
// Entry point of the `hookbot` command. The sources are TypeScript; tsx compiles them once at load
// (about 0.3 s) so there is no build step between `npm install` and `npm start`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
