import { defineAction } from '../define-action.ts';
import { commentMarker } from '../comment-marker.ts';
import { nonEmptyTemplateSchema } from '../param-schemas.ts';
import { issueTarget, mergeRequestTarget, skip } from '../planned-call.ts';
import { compileTemplate } from '../template.ts';

const PREVIEW = 60;

export const comment = defineAction({
  name: 'comment',
  summary:
    'Posts a comment; `{{ placeholder }}` inserts a field of the item. The body ends with a hidden marker, so the same comment is never posted twice on one item.',
  example: 'Thanks @{{ author.username }}, a maintainer will look at this soon.',
  params: nonEmptyTemplateSchema,
  describe: (text) =>
    `comment: ${JSON.stringify(text.length > PREVIEW ? `${text.slice(0, PREVIEW)}…` : text)}`,
  compile: (text) => compileTemplate(text),
  plan: (render, input, { rule }) => {
    const text = render(input);
    const marker = commentMarker(rule, text);
    if (input.snapshot.commentMarkers?.includes(marker.id)) return skip('this comment was already posted');
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
    return [
      { call, reason: `post ${JSON.stringify(text.length > PREVIEW ? `${text.slice(0, PREVIEW)}…` : text)}` },
    ];
  },
});
