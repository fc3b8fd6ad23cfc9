import { describe, expect, it } from 'vitest';
import { issue, runCondition } from '../support.ts';

describe('description condition', () => {
  it.each([
    {
      name: 'contains',
      description: 'Steps to reproduce: x',
      spec: { contains: 'Steps to reproduce' },
      ok: true,
    },
    {
      name: 'matches across lines with (?m)',
      description: 'a\nSeverity: high',
      spec: { matches: '(?m)^Severity: high$' },
      ok: true,
    },
    { name: 'an empty description reads as empty text', description: null, spec: { equals: '' }, ok: true },
    { name: 'an empty description contains nothing', description: null, spec: { contains: 'x' }, ok: false },
  ])('$name', ({ description, spec, ok }) => {
    expect(runCondition({ description: spec }, issue('issue-open', { description })).ok).toBe(ok);
  });
});
