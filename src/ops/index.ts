/** Logs and metrics, seen from outside: the logger, the metrics and the log context that follows an item or a sweep. */
export { withDecisionMetrics } from './decision-metrics.ts';
export { currentLogContext, runInNewLogContext } from './log-context.ts';
export { type HookbotLogger, createLogger } from './logger.ts';
export { createHookToAction } from './hook-to-action.ts';
export { type Metrics, actionResultOf, createMetrics } from './metrics.ts';
export { redactValue, secretMatcher } from './redact.ts';
