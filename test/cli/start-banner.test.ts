/**
 * The `npm start` banner's promise (issue 37): the labels it says the bot adds come from the rules in
 * force, evaluated on the issue its next step opens.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startBanner, type StartBannerInput } from '../../src/cli/start-banner.ts';
import { labelsOnOpen } from '../../src/cli/start-promise.ts';
import { loadRules } from '../../src/rules/grammar/load.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-start-banner-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function labelsOf(rules: string): Promise<string[]> {
  const folder = mkdtempSync(path.join(dir, 'rules-'));
  writeFileSync(path.join(folder, 'default.yml'), rules);
  const loaded = await loadRules(folder);
  expect(loaded.problems).toEqual([]);
  return labelsOnOpen(loaded.byProject('acme/web'));
}

const input = (labels: string[]): StartBannerInput => ({
  botUrl: 'http://127.0.0.1:3000',
  hookUrl: 'http://127.0.0.1:3000/hooks',
  sandboxUrl: 'http://127.0.0.1:4000',
  sandboxApiUrl: 'http://127.0.0.1:4000/api/v3',
  adminToken: 'root-token',
  demoTokens: { alice: 'alice-demo-token', hookbot: 'hookbot-demo-token' },
  registered: ['acme/web'],
  rulesDir: 'my-rules',
  rulesSet: true,
  statePath: 'data/hookbot.json',
  sandboxData: 'data/sandbox.json',
  pid: 42,
  cwd: '/work',
  quietLogs: false,
  labelsOnOpen: labels,
});

describe('npm start banner: what it promises', () => {
  it('the shipped rules add bug and needs-triage to the demo issue', async () => {
    const loaded = await loadRules('rules');
    expect(await labelsOnOpen(loaded.byProject('acme/web'))).toEqual(['bug', 'needs-triage']);
  });

  it('other rules: the labels they add, only on the events and conditions they have', async () => {
    const rule = (on: string, title: string, labels: string) =>
      `  - name: r${labels}\n    on: [${on}]\n    if: [ { title: { matches: '${title}' } } ]\n    do: [ { label: { add: [${labels}] } } ]\n`;
    expect(await labelsOf(`rules:\n${rule('issue.open', '(?i)crash', 'question, ui')}`)).toEqual([
      'question',
      'ui',
    ]);
    // Another event, or a title the demo issue does not have: nothing is promised.
    expect(await labelsOf(`rules:\n${rule('issue.close', '(?i)crash', 'done')}`)).toEqual([]);
    expect(await labelsOf(`rules:\n${rule('issue.open', 'security', 'security')}`)).toEqual([]);
  });

  it('says the labels found, or that the rules add none', () => {
    expect(startBanner(input(['question', 'ui', 'p1']))).toContain(
      'Next: open an issue as alice, then read its labels back (the rules in force add question, ui and p1):',
    );
    const none = startBanner(input([]));
    expect(none).toContain(
      'Next: open an issue as alice, then read its labels back (the rules in force in my-rules/ add none to it; explain says what they did):',
    );
    expect(none).not.toContain('bug');
  });
});
