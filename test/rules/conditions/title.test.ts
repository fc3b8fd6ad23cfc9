import { describe, expect, it } from 'vitest';
import { describeCondition, issue, runCondition } from '../support.ts';

describe('title condition', () => {
  const crash = issue('issue-open'); // "App crash on start"
  it.each([
    { name: 'plain string is equality', spec: { title: 'App crash on start' }, ok: true },
    { name: 'plain string does not match a part', spec: { title: 'App crash' }, ok: false },
    { name: 'in: one of several', spec: { title: { in: ['Other', 'App crash on start'] } }, ok: true },
    { name: 'matches with a leading (?i)', spec: { title: { matches: '(?i)\\b(BUG|CRASH)\\b' } }, ok: true },
    {
      name: 'matches is case-sensitive without (?i)',
      spec: { title: { matches: '\\bCRASH\\b' } },
      ok: false,
    },
    { name: 'contains', spec: { title: { contains: 'crash' } }, ok: true },
    { name: 'glob', spec: { title: { glob: 'App *' } }, ok: true },
    {
      name: 'operators together must all hold',
      spec: { title: { contains: 'crash', equals: 'x' } },
      ok: false,
    },
  ])('$name', ({ spec, ok }) => {
    expect(runCondition(spec, crash)).toEqual({ value: 'App crash on start', ok });
  });

  it('reads only the first 64 KiB of a long title', () => {
    const long = issue('issue-open', { title: `${'a'.repeat(70_000)}needle` });
    expect(runCondition({ title: { matches: 'needle' } }, long).ok).toBe(false);
    expect(runCondition({ title: { contains: 'needle' } }, long).ok).toBe(true);
  });

  it('keeps the value short in the record', () => {
    const long = issue('issue-open', { title: 'x'.repeat(500) });
    expect(runCondition({ title: 'y' }, long).value).toBe(`${'x'.repeat(120)}…`);
  });

  it.each([
    { spec: { title: 'Crash' }, text: 'title is "Crash"' },
    { spec: { title: { matches: '(?i)\\bbug\\b' } }, text: 'title matches /\\bbug\\b/i' },
    {
      spec: { title: { in: ['a', 'b'], contains: 'c' } },
      text: 'title is one of ["a", "b"] and contains "c"',
    },
  ])('describes $text', ({ spec, text }) => {
    expect(describeCondition(spec)).toBe(text);
  });
});
