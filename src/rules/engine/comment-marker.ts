/**
 * The hidden marker at the end of every comment the bot posts:
 * `<!-- hookbot:rule=<rule>:key=<hash of the comment's identity> -->`, the identity being the
 * template as written (or, for comments posted again when their text changes, the rendered text;
 * actions/comment.ts). Before posting, the executor looks for it among the bot's own notes on the
 * item: the same comment is never posted twice, even when a delivery is retried or a crash
 * interrupts the executor after the post. Markers in other users' notes count for nothing (anyone
 * can copy one), so a user cannot suppress a comment.
 */
import { createHash } from 'node:crypto';

export interface CommentMarker {
  /** `hookbot:rule=...:key=...`: what to look for in notes. */
  id: string;
  /** The HTML comment appended to the body. */
  html: string;
}

// Colons separate the marker's fields and `>` could end the HTML comment: the rule name is
// percent-encoded, keeping spaces for readability.
const encodeRule = (rule: string): string => encodeURIComponent(rule).replaceAll('%20', ' ');

export function commentMarker(rule: string, identity: string): CommentMarker {
  const key = createHash('sha256').update(`${rule}\n${identity}`).digest('hex').slice(0, 16);
  const id = `hookbot:rule=${encodeRule(rule)}:key=${key}`;
  return { id, html: `<!-- ${id} -->` };
}

const MARKER = /<!-- (hookbot:rule=[^:>]*:key=[0-9a-f]{16}) -->/g;

/** The marker ids found in a note's body. */
export function extractMarkers(body: string): string[] {
  return [...body.matchAll(MARKER)].map((match) => match[1] ?? '');
}

/** The marker of a comment posted once per rule and item: its identity is the template as written. */
export function templateMarker(rule: string, template: string): CommentMarker {
  return commentMarker(rule, `template\n${template}`);
}

/** The marker of a comment posted again whenever its rendered text changes (`repost_when_changed`). */
export function renderedMarker(rule: string, text: string): CommentMarker {
  return commentMarker(rule, `text\n${text}`);
}
