import { describe, expect, it } from 'vitest';
import { hintsOf, itemKey } from '../../src/events/hints.ts';
import { parseHookEvent } from '../../src/events/schemas.ts';
import { parseTimestamp } from '../../src/events/timestamps.ts';
import { HOOK_FIXTURES, fixture } from './fixtures.ts';

describe('timestamps of that era', () => {
  it.each([
    ['2016-08-12 15:23:28 UTC', '2016-08-12T15:23:28.000Z'],
    ['2016-08-12 15:23:28 +0100', '2016-08-12T14:23:28.000Z'],
    ['2016-08-12 15:23:28 -05:30', '2016-08-12T20:53:28.000Z'],
    ['2012-01-03T23:36:29+02:00', '2012-01-03T21:36:29.000Z'],
    ['2016-01-19T08:40:25.934Z', '2016-01-19T08:40:25.934Z'],
  ])('reads %s', (text, iso) => {
    expect(new Date(parseTimestamp(text)!).toISOString()).toBe(iso);
  });

  it.each([[''], ['yesterday'], ['2016-13-45 99:99:99 UTC'], [42], [null]])('refuses %j', (text) => {
    expect(parseTimestamp(text)).toBeUndefined();
  });
});

describe('typed hook events from the real formats', () => {
  it.each(HOOK_FIXTURES)('parses %s (%s)', (name) => {
    const body = fixture(name);
    const parsed = parseHookEvent(body.object_kind, body);
    expect(parsed).toMatchObject({ ok: true, event: { kind: body.object_kind } });
  });

  it('names the field that does not fit', () => {
    const body = fixture('issue.json');
    body.object_attributes.id = 'three';
    expect(parseHookEvent('issue', body)).toEqual({
      ok: false,
      message: 'issue payload: object_attributes.id: Invalid input: expected number, received string',
    });
  });

  it('refuses an unknown kind', () => {
    expect(parseHookEvent('deployment', {})).toEqual({
      ok: false,
      message: 'unknown object_kind "deployment"',
    });
  });
});

describe('what each event asks to re-read', () => {
  const hints = (name: string) => {
    const body = fixture(name);
    const parsed = parseHookEvent(body.object_kind, body);
    if (!parsed.ok) throw new Error(parsed.message);
    return hintsOf(parsed.event);
  };

  it.each([
    ['issue.json', 'issue:14:301', 'issue', 'open'],
    ['issue-close.json', 'issue:14:301', 'issue', 'close'],
    ['issue-confidential.json', 'issue:14:301', 'issue', 'update'],
    ['merge_request.json', 'merge_request:14:99', 'merge_request', 'open'],
    ['merge_request-update.json', 'merge_request:14:99', 'merge_request', 'update'],
    ['merge_request-merge.json', 'merge_request:14:99', 'merge_request', 'merge'],
    ['note-issue.json', 'issue:5:301', 'note', 'created'],
  ])('%s names item %s (trigger %s.%s)', (name, key, kind, action) => {
    const [hint, ...rest] = hints(name);
    expect(rest).toEqual([]);
    expect(hint?.target).toBe('item');
    if (hint?.target !== 'item') return;
    expect(itemKey(hint.item)).toBe(key);
    expect(hint.trigger).toMatchObject({ kind, action });
  });

  it('a note on an MR carries its text and author for commands and loop prevention', () => {
    const [hint] = hints('note-merge_request.json');
    const body = fixture('note-merge_request.json');
    expect(hint).toMatchObject({
      target: 'item',
      item: { type: 'merge_request', id: body.merge_request.id },
      trigger: {
        kind: 'note',
        note: body.object_attributes.note,
        actor: { id: body.object_attributes.author_id, username: body.user.username },
      },
    });
  });

  it('a push names its branch, so the open MRs from it get re-read', () => {
    expect(hints('push.json')).toMatchObject([
      { target: 'branch', projectId: 15, branch: 'master', trigger: { kind: 'push' } },
    ]);
  });

  it('build and pipeline events name a commit (status changed)', () => {
    expect(hints('build.json')).toMatchObject([
      {
        target: 'commit',
        project: 14,
        sha: '2293ada6b400935a1378653304eaf6221e0fdb8f',
        trigger: { kind: 'status', action: 'success' },
      },
    ]);
    // 8.x pipeline payloads carry no project id: the path stands in for it.
    expect(hints('pipeline.json')).toMatchObject([
      { target: 'commit', project: 'gitlabhq/gitlab-test', ref: 'ms-viewport', trigger: { kind: 'status' } },
    ]);
  });

  it('a commit note names the commit; snippet notes, tag pushes and wiki pages name nothing to re-read', () => {
    expect(hints('note-commit.json')).toMatchObject([
      { target: 'commit', sha: 'cfe32cf61b73a0d5e9f13e774abde7ff789b1660' },
    ]);
    expect(hints('note-snippet.json')).toEqual([]);
    expect(hints('tag_push.json')).toEqual([]);
    expect(hints('wiki_page.json')).toEqual([]);
  });
});
