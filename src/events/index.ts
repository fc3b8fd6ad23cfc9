/** What a delivery means, seen from outside: kinds and outcomes, typed payload schemas, hints of which items to re-read. */
export { type DeliveryOutcome, KNOWN_KINDS } from './delivery.ts';
export { type Hint, type ItemRef, type Trigger, hintsOf, itemKey } from './hints.ts';
export { type HookEvent, parseHookEvent } from './schemas.ts';
export { parseTimestamp } from './timestamps.ts';
