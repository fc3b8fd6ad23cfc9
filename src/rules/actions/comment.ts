import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { commentMarker, renderedMarker, templateMarker } from '../engine/comment-marker.ts';
import { nonEmptyTemplateSchema } from '../engine/param-schemas.ts';
import { issueTarget, mergeRequestTarget, skip } from '../engine/planned-call.ts';
import { compileTemplate } from '../engine/template.ts';

const PREVIEW = 60;

const shortText = (text: string): string =>
  JSON.stringify(text.length > PREVIEW ? `${text.slice(0, PREVIEW)}…` : text);

/**
 * A comment's identity is its rule and its template on one item, not the text it renders to: a
 * comment that says `{{ title }}` is posted once, not again on every title edit. A rule that
 * wants a new comment whenever the rendered text changes (a report that follows the item) says
 * `repost_when_changed: true`; the identity then includes the rendered text.
 */
export const comment = defineAction({
  inRepositories: 'allowed',
  name: 'comment',
  summary:
    "Posts a comment; `{{ placeholder }}` inserts a field of the item. Posted once per rule and item: the body ends with a hidden marker naming the rule and the template, found again among the bot's own notes, so neither a retry, a restart nor an edit of the item posts it twice, and nobody else's note can stand in for it. `{ text: ..., repost_when_changed: true }` posts it again each time the rendered text differs from every earlier post.",
  example: 'Thanks @{{ author.username }}, a maintainer will look at this soon.',
  params: z.union([
    nonEmptyTemplateSchema,
    z.strictObject({
      text: nonEmptyTemplateSchema,
      repost_when_changed: z.boolean().optional().meta({
        description: 'post again when the rendered text changes (default false: once per rule and item)',
      }),
    }),
  ]),
  describe: (p) => {
    const text = typeof p === 'string' ? p : p.text;
    const again = typeof p !== 'string' && p.repost_when_changed ? ' (again when its text changes)' : '';
    return `comment: ${shortText(text)}${again}`;
  },
  compile: (p) => {
    const text = typeof p === 'string' ? p : p.text;
    return {
      template: text,
      render: compileTemplate(text),
      repost: typeof p !== 'string' && p.repost_when_changed === true,
    };
  },
  plan: (c, input, { rule }) => {
    const text = c.render(input);
    const marker = c.repost ? renderedMarker(rule, text) : templateMarker(rule, c.template);
    const posted = input.snapshot.commentMarkers;
    if (posted?.includes(marker.id)) return skip('this comment was already posted');
    // Versions before 0.2 keyed a comment on its rendered text alone: such a comment counts as posted.
    if (posted?.includes(commentMarker(rule, text).id)) return skip('this comment was already posted');
    const body = `${text}\n\n${marker.html}`;
    const call =
      input.snapshot.kind === 'issue'
        ? {
            op: 'notes.createIssueNote' as const,
            args: { ...issueTarget(input.snapshot), body },
            marker: marker.id,
          }
        : {
            op: 'notes.createMergeRequestNote' as const,
            args: { ...mergeRequestTarget(input.snapshot), body },
            marker: marker.id,
          };
    return [{ call, reason: `post ${shortText(text)}` }];
  },
});
