export { createScheduler, type Scheduler, type ScheduledSweep, type SchedulerOptions } from './scheduler.ts';
export {
  createSweepSet,
  SWEEP_NAMES,
  type SweepFilter,
  type SweepName,
  type SweepReport,
  type SweepSet,
  type SweepSetDeps,
  type SweepSettings,
} from './sweep-set.ts';
export { enabledSweeps, scheduledSweepsOf, sweepSettingsOf } from './from-config.ts';
export { summarise, needsAttention } from './summary.ts';
export { approve, definitionHash, DEFAULT_BREAKER, type BreakerLimits } from './breaker.ts';
export { timingOfSchedule, timingOfSweep, nextRunAfter, type Timing } from './timing.ts';
export type { SweepLog, SweepProgress, SweepRunOptions } from './types.ts';
