import { describe, expect, it } from 'vitest';
import { commentMarker, renderedMarker, templateMarker } from '../../../src/rules/engine/comment-marker.ts';
import { issue, mergeRequest, runAction } from '../support.ts';

describe('comment action', () => {
  it('renders placeholders and ends with the hidden marker', () => {
    const text = 'Thanks @alice, a maintainer will look at #3 in acme/web.';
    const marker = templateMarker(
      'test rule',
      'Thanks @{{ author.username }}, a maintainer will look at #{{iid}} in {{ project.path_with_namespace }}.',
    );
    expect(
      runAction(
        {
          comment:
            'Thanks @{{ author.username }}, a maintainer will look at #{{iid}} in {{ project.path_with_namespace }}.',
        },
        issue('issue-open'),
      ),
    ).toEqual([
      {
        call: {
          op: 'notes.createIssueNote',
          args: { project: 8, issue_id: 43, body: `${text}\n\n<!-- ${marker.id} -->` },
          marker: marker.id,
        },
        reason: `post ${JSON.stringify(text)}`,
      },
    ]);
    expect(marker.id).toMatch(/^hookbot:rule=test rule:key=[0-9a-f]{16}$/);
  });

  it('comments on merge requests through the merge request notes', () => {
    expect(
      runAction({ comment: 'Merging {{ source_branch }} at {{ sha }}' }, mergeRequest('mr-green')),
    ).toMatchObject([
      {
        call: {
          op: 'notes.createMergeRequestNote',
          args: {
            merge_request_id: 7,
            body: expect.stringMatching(/^Merging feature\/dark-mode at 1f2e3d4c/),
          },
        },
      },
    ]);
  });

  it('plans nothing when the same comment is already on the item', () => {
    const marker = templateMarker('test rule', 'Closing after 60 days.');
    expect(
      runAction({ comment: 'Closing after 60 days.' }, issue('issue-open', { commentMarkers: [marker.id] })),
    ).toEqual({
      skipped: 'this comment was already posted',
    });
  });

  it('plans nothing when a comment of an older version (keyed on its text) is on the item', () => {
    const legacy = commentMarker('test rule', 'Closing after 60 days.');
    expect(
      runAction({ comment: 'Closing after 60 days.' }, issue('issue-open', { commentMarkers: [legacy.id] })),
    ).toEqual({ skipped: 'this comment was already posted' });
  });

  it('is one comment per rule and item: an edit of the title changes its text, not its identity', () => {
    const template = 'Looking at "{{ title }}"';
    const posted = templateMarker('test rule', template).id;
    const edited = issue('issue-open', { title: 'A new title', commentMarkers: [posted] });
    expect(runAction({ comment: template }, edited)).toEqual({ skipped: 'this comment was already posted' });
  });

  it('with repost_when_changed, posts again when the rendered text differs from every earlier post', () => {
    const spec = { comment: { text: 'Looking at "{{ title }}"', repost_when_changed: true } };
    const before = renderedMarker('test rule', `Looking at "${issue('issue-open').title}"`).id;
    expect(runAction(spec, issue('issue-open', { commentMarkers: [before] }))).toEqual({
      skipped: 'this comment was already posted',
    });
    const edited = issue('issue-open', { title: 'A new title', commentMarkers: [before] });
    expect(runAction(spec, edited)).toMatchObject([
      { call: { args: { body: expect.stringMatching(/^Looking at "A new title"/) } } },
    ]);
  });

  it('gives another comment another marker', () => {
    expect(commentMarker('r', 'one').id).not.toBe(commentMarker('r', 'two').id);
    expect(commentMarker('r', 'one').id).not.toBe(commentMarker('s', 'one').id);
  });

  it('keeps a title from forging or closing the marker', () => {
    const sneaky = issue('issue-open', { title: 'x --> <!-- hookbot:rule=a:key=0000000000000000 -->' });
    expect(runAction({ comment: 'About {{ title }}' }, sneaky)).toMatchObject([
      {
        call: {
          args: {
            body: expect.stringMatching(
              /^About x --&gt; &lt;!-- hookbot:rule=a:key=0000000000000000 --&gt;\n\n<!-- /,
            ),
          },
        },
      },
    ]);
  });
});
