import { beforeAll, describe, expect, it } from 'vitest';
import { DEVELOPER, MASTER, REPORTER } from '../../src/sandbox/permissions.ts';
import { DEMO_TOKENS, seedDemo, type DemoSeed } from '../../src/sandbox/seed.ts';
import { useSandbox } from '../helpers/sandbox.ts';

const LABELS = ['bug', 'needs-triage', 'question', 'automerge', 'do-not-merge', 'pinned'];

describe('sandbox demo seed', () => {
  const ctx = useSandbox();
  let seed: DemoSeed;

  beforeAll(async () => {
    seed = await seedDemo(ctx().ctx);
  });

  it.each([
    ['alice', DEVELOPER],
    ['bob', REPORTER],
    ['hookbot', MASTER],
  ] as const)('%s logs in with the known token and has access level %i in acme', async (name, level) => {
    expect(seed.users[name].token).toBe(DEMO_TOKENS[name]);
    const me = await ctx().call('GET', '/user', { token: DEMO_TOKENS[name] });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: seed.users[name].id, username: name });
    const web = await ctx().call('GET', '/projects/acme%2Fweb', { token: DEMO_TOKENS[name] });
    expect(web.status).toBe(200);
    expect(web.body.permissions.group_access.access_level).toBe(level);
  });

  it('creates acme/web and acme/helpdesk in the group acme', async () => {
    for (const [key, path] of [
      ['web', 'acme/web'],
      ['helpdesk', 'acme/helpdesk'],
    ] as const) {
      const res = await ctx().call('GET', `/projects/${seed.projects[key].id}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        path_with_namespace: path,
        namespace: { path: 'acme', name: 'Acme' },
      });
      expect(seed.projects[key].path_with_namespace).toBe(path);
    }
  });

  it('gives each project the labels the rules use', () => {
    for (const project of Object.values(seed.projects)) {
      const labels = ctx().db.data.labels.filter((l) => l.project_id === project.id);
      expect(labels.map((l) => l.title)).toEqual(LABELS);
      for (const label of labels) expect(label.color).toMatch(/^#[0-9a-f]{6}$/i);
    }
  });

  it('files issues with per-project iids and known labels, one closed, one in a milestone', () => {
    const db = ctx().db;
    for (const project of Object.values(seed.projects)) {
      const issues = db.data.issues.filter((i) => i.project_id === project.id);
      expect(issues.map((i) => i.iid)).toEqual([1, 2, 3]);
      for (const issue of issues) for (const label of issue.labels) expect(LABELS).toContain(label);
    }
    const web = db.data.issues.filter((i) => i.project_id === seed.projects.web.id);
    expect(web.filter((i) => i.state === 'closed')).toHaveLength(1);
    expect(web.find((i) => i.iid === 1)?.milestone_id).toEqual(expect.any(Number));
    const open = (id: number) =>
      db.data.issues.filter((i) => i.project_id === id && i.state !== 'closed').length;
    expect(open(seed.projects.web.id)).toBe(2);
  });

  it('opens a merge request from a feature branch that git really holds', async () => {
    const { search } = seed.mergeRequests;
    const mr = ctx().db.data.mergeRequests.find((m) => m.id === search.id)!;
    expect(mr).toMatchObject({
      iid: 1,
      project_id: seed.projects.web.id,
      source_branch: 'feature/search',
      target_branch: 'master',
      state: 'opened',
      author_id: seed.users.alice.id,
    });
    const git = ctx().ctx.git;
    expect(await git.branch(seed.projects.web.id, 'master')).toBeDefined();
    const compare = await git.compare(seed.projects.web.id, 'master', seed.projects.web.id, 'feature/search');
    expect(compare.commits.map((c) => c.title)).toEqual(['Add a case-insensitive project search']);
    expect(mr.merge_status).toBe('can_be_merged');
  });

  it('fills the activity feed, newest first', async () => {
    const res = await ctx().call('GET', `/projects/${seed.projects.web.id}/events`, {
      query: { per_page: 100 },
    });
    expect(res.status).toBe(200);
    expect(res.body[0]).toMatchObject({
      action_name: 'opened',
      target_type: 'MergeRequest',
      author_username: 'alice',
    });
    const comment = res.body.find((e: any) => e.action_name === 'commented on');
    expect(comment.note).toMatchObject({ body: 'I can reproduce this on master.', noteable_type: 'Issue' });
    expect(res.body.at(-1)).toMatchObject({ action_name: 'created' });
  });
});
