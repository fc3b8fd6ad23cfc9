import { describe, expect, it } from 'vitest';
import { describeCondition, mergeRequest, runCondition } from '../support.ts';

describe('files condition', () => {
  const mr = mergeRequest('mr-green'); // src/theme.ts, src/styles/dark.css, README.md
  it.each([
    { name: 'any_match: one file under src/**', spec: { any_match: ['src/**'] }, ok: true },
    { name: 'any_match: none under docs/**', spec: { any_match: ['docs/**'] }, ok: false },
    { name: 'all_match: README is not under src', spec: { all_match: ['src/**'] }, ok: false },
    { name: 'all_match: with a second glob', spec: { all_match: ['src/**', '*.md'] }, ok: true },
    { name: 'none_match: no lock file', spec: { none_match: ['**/*.lock'] }, ok: true },
    { name: 'none_match: a css file', spec: { none_match: ['**/*.css'] }, ok: false },
  ])('$name', ({ spec, ok }) => {
    expect(runCondition({ files: spec }, mr)).toEqual({
      value: ['src/theme.ts', 'src/styles/dark.css', 'README.md'],
      ok,
    });
  });

  it('matches dot files', () => {
    const ci = mergeRequest('mr-green', { changedFiles: ['.gitlab-ci.yml'] });
    expect(runCondition({ files: { any_match: ['**'] } }, ci).ok).toBe(true);
  });

  it('says unknown and does not match when the changes were not read', () => {
    expect(runCondition({ files: { none_match: ['**'] } }, mergeRequest('mr-unread'))).toEqual({
      value: null,
      ok: false,
      unknown: true,
      note: 'the changed files were not read',
    });
  });

  it('lists at most 20 files in the record', () => {
    const many = mergeRequest('mr-green', { changedFiles: Array.from({ length: 25 }, (_, i) => `f${i}`) });
    const value = runCondition({ files: { any_match: ['f1'] } }, many).value as string[];
    expect(value).toHaveLength(21);
    expect(value[20]).toBe('… 5 more');
  });

  it('describes', () => {
    expect(describeCondition({ files: { any_match: ['src/**'], none_match: ['*.lock'] } })).toBe(
      'changed files: some match [src/**] and none match [*.lock]',
    );
  });
});
