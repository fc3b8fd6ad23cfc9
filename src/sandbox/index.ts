/** The sandbox, seen from outside: starting the simulated server and its seeds (the CLI offers it; the bot never imports it). */
export { DEMO_TOKENS } from './seed.ts';
export { type Sandbox, startSandbox } from './server.ts';
