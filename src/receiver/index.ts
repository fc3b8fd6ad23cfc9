/** The receiver, seen from outside: intake (the hook route and its server), the processing pipeline, readiness and the ops app, as start-up and the CLI use them. */
export { exposureProblem, exposureWarning, isLoopbackHost } from './exposure.ts';
export { type DeliveryOutcome, createHookHandler } from './hook-handler.ts';
export { hostCheck } from './host-check.ts';
export { type OpsAppOptions, createOpsApp } from './ops-app.ts';
export {
  type BotIdentity,
  type ItemProcessor,
  type Pipeline,
  type PipelineLog,
  type PipelineOptions,
  createPipeline,
} from './pipeline.ts';
export { createReadiness } from './readiness.ts';
export { createRefusalLog } from './refusal-log.ts';
export { createHintResolver } from './resolve-hints.ts';
export { createSecretRefusalLog, reportRefusals } from './secret-refusal-log.ts';
export { createReceiverServer, listen } from './server.ts';
export { triggerOf } from './trigger.ts';
export { type VerifyOptions } from './verify.ts';
export { createQueueControlRoutes } from './queue-control-routes.ts';
