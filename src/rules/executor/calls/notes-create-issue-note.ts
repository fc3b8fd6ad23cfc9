/** `notes.createIssueNote`: A comment on an issue, never twice: looked for by its marker before posting and after a lost answer. */
import type { CallHandler } from '../types.ts';
import { commentKey } from './keys.ts';
import { comment } from '../item-calls.ts';

export const notesCreateIssueNote: CallHandler<'notes.createIssueNote'> = {
  key: (call) => commentKey(call),
  freshCheck: false,
  perform: (ctx, call) => comment(ctx, call.args, call.marker),
};
