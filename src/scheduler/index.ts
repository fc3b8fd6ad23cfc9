/** The scheduler, seen from outside: what start-up and the CLI use. */
export { createScheduler } from './scheduler.ts';
export { createSweepSet, type SweepSet } from './sweep-set.ts';
export { gitAccessOf, scheduledSweepsOf, sweepSettingsOf } from './from-config.ts';
