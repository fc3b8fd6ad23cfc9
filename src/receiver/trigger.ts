/**
 * From a hook's hint to the rule engine's trigger: what happened, and whether the delivery says
 * the bot itself did it (loop prevention: the bot's own comments fire Note Hook too). One
 * conversion for the pipeline and for `hookbot simulate`, so a simulated delivery triggers exactly
 * what a real one would.
 *
 * Facts come from the server, never from a payload (anyone who knows the hook URL can send one;
 * the secret travels in clear): the payload's user is used for nothing but the `byBot` hint, a
 * note's text and author are read through the API by the note's id (rules/item/read-snapshot.ts), and
 * no other event names an actor at all.
 */
import type { Trigger as HookTrigger } from '../events/index.ts';
import { type BotIdentity, isBotUser, type Trigger, type TriggerAction } from '../rules/index.ts';

export type { BotIdentity } from '../rules/index.ts';

export function triggerOf(hook: HookTrigger, bot: BotIdentity | undefined): Trigger {
  const byBot = isBotUser(bot, hook.actor);
  const trigger: Trigger = { kind: hook.kind, byBot };
  if (hook.action && (hook.kind === 'issue' || hook.kind === 'merge_request'))
    trigger.action = hook.action as TriggerAction;
  if (hook.kind === 'note' && hook.noteId !== undefined) trigger.noteId = hook.noteId;
  return trigger;
}
