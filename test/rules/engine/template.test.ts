import { describe, expect, it } from 'vitest';
import { createEvalInput } from '../../../src/rules/engine/eval-input.ts';
import { checkTemplate, compileTemplate, PLACEHOLDERS } from '../../../src/rules/engine/template.ts';
import { issue, mergeRequest, NOW } from '../support.ts';

describe('templates', () => {
  it.each([
    { text: 'no placeholder', out: 'no placeholder' },
    { text: 'Hi @{{author.username}} ({{ author.id }})', out: 'Hi @alice (5)' },
    {
      text: '#{{ iid }} {{ title }} [{{ labels }}] in {{ project.path_with_namespace }}',
      out: '#3 App crash on start [ui] in acme/web',
    },
    {
      text: 'assignee: "{{ assignee.username }}", branch: "{{ source_branch }}"',
      out: 'assignee: "", branch: ""',
    },
    { text: 'by {{ actor.username }} on {{ event }}', out: 'by alice on issue.open' },
    { text: 'braces {{ but no close', out: 'braces {{ but no close' },
  ])('renders $text', ({ text, out }) => {
    expect(compileTemplate(text)(createEvalInput(issue('issue-open'), NOW))).toBe(out);
  });

  it('renders merge request fields', () => {
    const render = compileTemplate(
      '{{ source_branch }} -> {{ target_branch }} at {{ sha }}, +{{ upvotes }}/-{{ downvotes }}',
    );
    expect(render(createEvalInput(mergeRequest('mr-green'), NOW))).toBe(
      'feature/dark-mode -> master at 1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c, +2/-0',
    );
  });

  it('reports unknown placeholders with the closest name', () => {
    expect(checkTemplate('{{ author.usernme }} {{ title }} {{ nope }}')).toEqual([
      { message: 'unknown placeholder "{{ author.usernme }}"', hint: 'did you mean "author.username"?' },
      { message: 'unknown placeholder "{{ nope }}"', hint: `known: ${Object.keys(PLACEHOLDERS).join(', ')}` },
    ]);
  });
});
