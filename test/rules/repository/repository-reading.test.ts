/**
 * How the repository rules layer reads `.hookbot.yml`, against the sandbox over HTTP and git
 * (issue 28): the default branch by its full name, so a developer's tag named like it is never read
 * (item 1); a file over the limit of a rule file, or a merge request's change too large to list, is
 * never read whole, and is answered with a problem and a status rather than the bot's memory
 * (item 5).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../../src/api/index.ts';
import { compileRules, type CompiledRuleSet } from '../../../src/rules/engine/compile.ts';
import { repositoryPolicy } from '../../../src/rules/repository/allow-list.ts';
import { createRepositoryRules } from '../../../src/rules/repository/repository-rules.ts';
import { DEMO_TOKENS } from '../../../src/sandbox/seed.ts';
import { startSandbox, type Sandbox } from '../../../src/sandbox/server.ts';
import { startFaultProxy } from '../../helpers/fault-proxy.ts';
import { gitClient, type GitClient } from '../../helpers/git-client.ts';

const central = (): CompiledRuleSet =>
  compileRules([{ rules: [{ name: 'seen', on: ['issue.open'], do: ['close'] }] as never }]);

const ruleFile = (name: string) =>
  `rules:\n  - name: ${name}\n    on: [issue.open]\n    do:\n      - label: { add: [${name}] }\n`;

describe('repository rules: what is read, and how much', () => {
  let sb: Sandbox;
  let admin: Client;
  let git: GitClient;
  /** alice, a developer of acme, over git with a personal access token. */
  let aliceUrl: (project: string) => string;

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'repository-reading-root' });
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    git = await gitClient();
    const alice = sb.ctx.db.data.users.find((user) => user.username === 'alice')!;
    alice.personal_access_tokens = [...(alice.personal_access_tokens ?? []), 'alice-git-token'];
    aliceUrl = (project) => {
      const url = new URL(`${sb.url}/${project}.git`);
      url.username = 'alice';
      url.password = 'alice-git-token';
      return url.toString();
    };
  });
  afterAll(async () => {
    await git?.close();
    await sb?.close();
  });

  function layer(baseUrl = sb.url) {
    const rules = createRepositoryRules({
      central: { forProject: () => central() },
      policy: repositoryPolicy([]),
    });
    const client = createClient({ baseUrl, token: DEMO_TOKENS.hookbot, retry: { limit: 0 } });
    rules.attach({ client, bot: { username: 'hookbot' }, planClient: () => client });
    return rules;
  }

  it("a developer's tag named like the default branch, holding a planted file, is never read", async () => {
    await admin.files.create('acme/web', {
      file_path: '.hookbot.yml',
      branch_name: 'master',
      content: ruleFile('triage'),
      commit_message: 'Add .hookbot.yml',
    });
    // alice may push tags (8.x protects branches, not tags): a tag `master` on a commit of her own.
    const dir = await git.clone(aliceUrl('acme/web'));
    await git.run(dir, ['checkout', '--quiet', '-b', 'planted']);
    await git.commit(dir, { '.hookbot.yml': ruleFile('planted') }, 'Plant rules');
    await git.run(dir, ['tag', 'master']);
    await git.run(dir, ['push', '--quiet', 'origin', 'refs/tags/master:refs/tags/master']);
    // The server resolves the bare name as git does, the tag first: the ambiguity is real.
    const bare = await admin.files.get('acme/web', '.hookbot.yml', 'master');
    expect(Buffer.from(bare.content, 'base64').toString('utf8')).toContain('planted');

    const rules = layer();
    await rules.prepare('acme/web');
    expect(rules.forProject('acme/web').rules.map((rule) => rule.name)).toEqual(['seen', 'triage']);
  });

  it('a file over the limit on the default branch: refused unread, the failed status on the branch head', async () => {
    // 1 MB of rules-looking text: over the 256 KB limit, well within what the API takes.
    const big = `rules:\n${'  # padding padding padding padding padding padding padding padding\n'.repeat(16_000)}`;
    await admin.files.create('acme/helpdesk', {
      file_path: '.hookbot.yml',
      branch_name: 'master',
      content: big,
      commit_message: 'A very large .hookbot.yml',
    });
    const head = (await admin.branches.get('acme/helpdesk', 'master')).commit.id;
    const rules = layer();
    await rules.prepare('acme/helpdesk');
    expect(rules.forProject('acme/helpdesk').rules.map((rule) => rule.name)).toEqual(['seen']);
    const [state] = rules.state().filter((entry) => entry.project === 'acme/helpdesk');
    expect(state).toMatchObject({
      project: 'acme/helpdesk',
      rules: 0,
      problemCommit: head,
      problems: [
        '1:1: the file is over the 256 KB limit of a rule file (not read past it) (split it, or move what is not rules elsewhere)',
      ],
    });
    const statuses = [];
    for await (const status of admin.statuses.list('acme/helpdesk', head)) statuses.push(status);
    expect(statuses).toEqual([
      expect.objectContaining({
        name: 'hookbot/config',
        status: 'failed',
        description:
          '1:1: the file is over the 256 KB limit of a rule file (not read past it) (split it, or move what is not rules elsewhere)',
      }),
    ]);
  });

  it('a merge request whose change is too large to list is still reviewed (by the blobs), its big file refused unread', async () => {
    const dir = await git.clone(aliceUrl('acme/web'));
    await git.run(dir, ['checkout', '--quiet', '-b', 'huge', 'origin/master']);
    // 5 MB of text: its diff alone passes the 4 MB read of /changes; the rules file passes 256 KB.
    const line = 'x'.repeat(99);
    const head = await git.commit(
      dir,
      {
        'data.txt': `${line}\n`.repeat(50_000),
        '.hookbot.yml': `rules: []\n${`# ${line}\n`.repeat(3_000)}`,
      },
      'Big change',
    );
    await git.run(dir, ['push', '--quiet', 'origin', 'huge']);
    const mr = await admin.mergeRequests.create('acme/web', {
      source_branch: 'huge',
      target_branch: 'master',
      title: 'Big change',
    });
    const rules = layer();
    const item = { type: 'merge_request' as const, projectId: mr.project_id, id: mr.id };
    await rules.reviewMergeRequest(item, [{ kind: 'merge_request', action: 'open', byBot: false }]);
    const statuses = [];
    for await (const status of admin.statuses.list('acme/web', head)) statuses.push(status);
    expect(statuses).toEqual([
      expect.objectContaining({
        name: 'hookbot/config',
        status: 'failed',
        description:
          '1:1: the file is over the 256 KB limit of a rule file (not read past it) (split it, or move what is not rules elsewhere)',
      }),
    ]);
  });

  it("a merge request's /changes are read once per head, not at each of its events", async () => {
    await admin.branches.create('acme/web', { branch_name: 'once', ref: 'master' });
    await admin.files.update('acme/web', {
      file_path: '.hookbot.yml',
      branch_name: 'once',
      content: ruleFile('once'),
      commit_message: 'Another rule',
    });
    const mr = await admin.mergeRequests.create('acme/web', {
      source_branch: 'once',
      target_branch: 'master',
      title: 'Another rule',
    });
    const proxy = await startFaultProxy(sb.url);
    try {
      const rules = layer(proxy.url);
      const item = { type: 'merge_request' as const, projectId: mr.project_id, id: mr.id };
      await rules.reviewMergeRequest(item, [{ kind: 'merge_request', action: 'open', byBot: false }]);
      await rules.reviewMergeRequest(item, [{ kind: 'merge_request', action: 'update', byBot: false }]);
      await rules.reviewMergeRequest(item, [{ kind: 'merge_request', action: 'update', byBot: false }]);
      expect(proxy.arrived('GET', /\/merge_requests\/\d+\/changes$/)).toBe(1);
    } finally {
      await proxy.close();
    }
  });
});
