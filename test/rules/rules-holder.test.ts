import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRulesHolder } from '../../src/rules/rules-holder.ts';
import { waitFor } from '../helpers/wait-for.ts';

const rule = (name: string) =>
  [
    'rules:',
    `  - name: ${name}`,
    '    on: [issue.open]',
    '    if: [ { state: opened } ]',
    '    do: [ close ]',
    '',
  ].join('\n');

function folder(text: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-rules-'));
  writeFileSync(path.join(dir, 'default.yml'), text);
  return dir;
}

const names = (holder: Awaited<ReturnType<typeof createRulesHolder>>) =>
  holder.forProject('acme/web').rules.map((r) => r.name);

describe('rules in force, reloaded', () => {
  it('takes new valid rules on reload', async () => {
    const dir = folder(rule('first'));
    const holder = await createRulesHolder(dir);
    expect(names(holder)).toEqual(['first']);
    writeFileSync(path.join(dir, 'default.yml'), rule('second'));
    expect(await holder.reload()).toEqual([]);
    expect(names(holder)).toEqual(['second']);
    expect(holder.state()).toMatchObject({ refused: false, problems: [], files: ['default.yml'] });
  });

  it('refuses a broken folder, logs every problem, and keeps the last good rules in force', async () => {
    const dir = folder(rule('good'));
    const errors: unknown[] = [];
    const holder = await createRulesHolder(dir, {
      log: { info: () => undefined, warn: () => undefined, error: (obj) => errors.push(obj) },
    });
    writeFileSync(
      path.join(dir, 'default.yml'),
      'rules:\n  - name: bad\n    on: [issue.open]\n    do: [ { coment: hi } ]\n',
    );
    const problems = await holder.reload();
    expect(problems.length).toBeGreaterThan(0);
    expect(names(holder)).toEqual(['good']);
    expect(holder.state().refused).toBe(true);
    expect(holder.state().problems.join('\n')).toMatch(/default\.yml:4:\d+: .*coment/);
    expect(errors).toHaveLength(1);
  });

  it('reloads by itself when a file of the folder changes', async () => {
    const dir = folder(rule('before'));
    const holder = await createRulesHolder(dir, { debounceMs: 20 });
    holder.watch();
    try {
      writeFileSync(path.join(dir, 'default.yml'), rule('after'));
      await waitFor(() => (names(holder)[0] === 'after' ? true : undefined), 10_000, 'the reload');
      expect(names(holder)).toEqual(['after']);
    } finally {
      holder.close();
    }
  });
});
