/** Every hook fixture with the `X-Gitlab-Event` header a real server sends it with. */
import { readFileSync } from 'node:fs';

export const HOOK_FIXTURES = [
  ['push.json', 'Push Hook'],
  ['tag_push.json', 'Tag Push Hook'],
  ['issue.json', 'Issue Hook'],
  ['issue-close.json', 'Issue Hook'],
  ['issue-confidential.json', 'Confidential Issue Hook'],
  ['merge_request.json', 'Merge Request Hook'],
  ['merge_request-update.json', 'Merge Request Hook'],
  ['merge_request-close.json', 'Merge Request Hook'],
  ['merge_request-reopen.json', 'Merge Request Hook'],
  ['merge_request-merge.json', 'Merge Request Hook'],
  ['note-merge_request.json', 'Note Hook'],
  ['note-issue.json', 'Note Hook'],
  ['note-commit.json', 'Note Hook'],
  ['note-snippet.json', 'Note Hook'],
  ['build.json', 'Build Hook'],
  ['pipeline.json', 'Pipeline Hook'],
  ['wiki_page.json', 'Wiki Page Hook'],
] as const;

export function fixtureText(name: string): string {
  return readFileSync(new URL(`../fixtures/hooks/${name}`, import.meta.url), 'utf8');
}

export function fixture(name: string): Record<string, any> {
  return JSON.parse(fixtureText(name));
}
