/**
 * `notes.createIssueNote` and `notes.createMergeRequestNote`: A comment on the item, never twice:
 * looked for by its marker before posting and after a lost answer.
 */
import type { CallHandler } from '../types.ts';
import { commentKey } from './keys.ts';
import { comment } from '../item-calls.ts';

const PREVIEW = 60;

export const notesCreate: CallHandler<'notes.createIssueNote' | 'notes.createMergeRequestNote'> = {
  key: (call) => commentKey(call),
  freshCheck: false,
  perform: (ctx, call) => comment(ctx, call.args, call.marker),
  effects: (call, hideText) => {
    if (hideText) return ['would comment on {items} (the text is not shown: confidential)'];
    const text = call.args.body
      .replace(/<!-- hookbot:[^>]*-->/g, '')
      .trim()
      .replace(/\s+/g, ' ');
    return [`would comment "${text.length > PREVIEW ? `${text.slice(0, PREVIEW - 1)}…` : text}" on {items}`];
  },
};
