/**
 * From a hook's hint to the rule engine's trigger: what happened, who did it, and whether that was
 * the bot itself (loop prevention: the bot's own comments fire Note Hook too). One conversion for
 * the pipeline and for `hookbot simulate`, so a simulated delivery triggers exactly what a real one would.
 */
import type { Trigger as HookTrigger } from '../events/hints.ts';
import type { Trigger, TriggerAction } from '../rules/snapshot.ts';

/** Who the bot is on the server: its events are flagged `byBot`. */
export interface BotIdentity {
  id?: number;
  username?: string;
}

export function triggerOf(hook: HookTrigger, bot: BotIdentity | undefined): Trigger {
  const actor = hook.actor;
  const byBot =
    bot !== undefined &&
    ((bot.id !== undefined && actor.id === bot.id) ||
      (bot.username !== undefined && actor.username === bot.username));
  const trigger: Trigger = { kind: hook.kind, byBot };
  if (hook.action && (hook.kind === 'issue' || hook.kind === 'merge_request'))
    trigger.action = hook.action as TriggerAction;
  if (hook.note !== undefined) trigger.note = hook.note;
  if (actor.username !== undefined) trigger.actor = { id: actor.id ?? 0, username: actor.username };
  return trigger;
}
