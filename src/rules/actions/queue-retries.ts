/**
 * The queue action's `retries` (queue.ts; docs/merge-queue.md#flaky-ci): in a merge train, a failed
 * car of one that no car behind it tested (none behind; each car behind contains it) is built once
 * more before it leaves. A real failure with cars behind costs nothing extra (they failed too); one
 * alone costs one build. The serial queue takes a failed head out at once, as before.
 */
export const DEFAULT_RETRIES = 1;
export const MAX_RETRIES = 3;
