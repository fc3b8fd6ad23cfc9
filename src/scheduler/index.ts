/** The scheduler, seen from outside: what start-up and the CLI use. */
export { createScheduler } from './scheduler.ts';
export { createSweepSet, type SweepReport, type SweepSet } from './sweep-set.ts';
export {
  echoLimitsOf,
  gitAccessOf,
  scheduledSweepsOf,
  sweepSettingsOf,
  enabledSweeps,
} from './from-config.ts';
export { approve, definitionHash, pauseOf } from './breaker.ts';
export { needsAttention, summarise, trippedRules } from './summary.ts';
export { createQueueControls } from './sweeps/queue-controls.ts';
