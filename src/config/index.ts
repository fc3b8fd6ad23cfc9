/** The configuration, seen from outside: its schema and type, and loading it from a file and the environment. */
export { loadConfig } from './load-config.ts';
export { type Config, SWEEP_DEFAULTS, type SweepName } from './schema.ts';
export { type ConfigSource, type ConfigSources, describeSource } from './sources.ts';
export { booleanVariable } from './booleans.ts';
export { unknownVariableWarnings } from './unknown-env.ts';
