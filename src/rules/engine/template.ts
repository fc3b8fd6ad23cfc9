/**
 * `{{ author.username }}`-style templates in comments, status descriptions and merge messages.
 * Placeholders are checked and compiled at load; rendering is a join.
 */
import { didYouMean } from '../../text/index.ts';
import type { EvalInput } from './eval-input.ts';
import type { ItemSnapshot } from './snapshot.ts';

type Getter = (input: EvalInput) => string | number | null | undefined;

const mr = <T>(item: ItemSnapshot, read: (m: Extract<ItemSnapshot, { kind: 'merge_request' }>) => T) =>
  item.kind === 'merge_request' ? read(item) : undefined;

export const PLACEHOLDERS: Readonly<Record<string, Getter>> = {
  title: (i) => i.snapshot.title,
  description: (i) => i.snapshot.description,
  state: (i) => i.snapshot.state,
  id: (i) => i.snapshot.id,
  iid: (i) => i.snapshot.iid,
  labels: (i) => i.snapshot.labels.join(', '),
  milestone: (i) => i.snapshot.milestone,
  'author.username': (i) => i.snapshot.author.username,
  'author.id': (i) => i.snapshot.author.id,
  'assignee.username': (i) => i.snapshot.assignee?.username,
  'project.path_with_namespace': (i) => i.snapshot.project.path_with_namespace,
  'project.id': (i) => i.snapshot.project.id,
  source_branch: (i) => mr(i.snapshot, (m) => m.source_branch),
  target_branch: (i) => mr(i.snapshot, (m) => m.target_branch),
  sha: (i) => mr(i.snapshot, (m) => m.sha),
  upvotes: (i) => mr(i.snapshot, (m) => m.upvotes),
  downvotes: (i) => mr(i.snapshot, (m) => m.downvotes),
  'actor.username': (i) => i.snapshot.trigger.actor?.username,
  event: (i) => i.event,
};

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

export interface TemplateProblem {
  message: string;
  hint?: string;
}

/** Problems of a template: unknown placeholders, with the closest known name. */
export function checkTemplate(text: string): TemplateProblem[] {
  const problems: TemplateProblem[] = [];
  for (const [, name = ''] of text.matchAll(PLACEHOLDER))
    if (!Object.hasOwn(PLACEHOLDERS, name)) {
      const hint = didYouMean(name, Object.keys(PLACEHOLDERS));
      problems.push({
        message: `unknown placeholder "{{ ${name} }}"`,
        ...(hint ? { hint } : { hint: `known: ${Object.keys(PLACEHOLDERS).join(', ')}` }),
      });
    }
  return problems;
}

export type Template = (input: EvalInput) => string;

// A title is anyone's text: it must not open or close the hidden marker of a comment.
const neutralise = (value: string): string => value.replaceAll('<!--', '&lt;!--').replaceAll('-->', '--&gt;');

export function compileTemplate(text: string): Template {
  const parts: (string | Getter)[] = [];
  let last = 0;
  for (const match of text.matchAll(PLACEHOLDER)) {
    const getter = PLACEHOLDERS[match[1] ?? ''];
    if (!getter) throw new Error(`unknown placeholder in template: ${match[0]}`);
    parts.push(text.slice(last, match.index), getter);
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  if (parts.length === 1) return () => text;
  return (input) => {
    let out = '';
    for (const part of parts)
      if (typeof part === 'string') out += part;
      else {
        const value = part(input);
        if (value !== null && value !== undefined) out += neutralise(String(value));
      }
    return out;
  };
}
