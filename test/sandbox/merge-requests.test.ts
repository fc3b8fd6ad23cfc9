import { beforeAll, describe, expect, it } from 'vitest';
import { useSandbox } from '../helpers/sandbox.ts';
import { makeWorld, type Member, type World } from '../helpers/issuable-world.ts';
import { addProject } from '../../src/sandbox/factories.ts';
import { readsFiles } from '../../src/sandbox/git.ts';

const README = 'line one\nline two\nline three\n';

describe('sandbox merge requests', () => {
  // One second further at each reading: created_at and updated_at orders are unambiguous.
  let tick = 0;
  const sandbox = useSandbox({ clock: () => new Date(Date.UTC(2016, 0, 1) + tick++ * 1000) });
  let w: World;

  beforeAll(async () => {
    const { sb, call } = sandbox();
    w = await makeWorld(sb, call, 'mrs', { initialFiles: { 'README.md': README } });
  });

  const pid = () => w.project.id;
  const mrs = () => `/projects/${pid()}/merge_requests`;
  /** A branch off `ref` (master by default), through the branches route. */
  const branch = async (name: string, ref = 'master', who: Member = w.developer) => {
    const res = await who.as('POST', `/projects/${pid()}/repository/branches`, {
      body: { branch_name: name, ref },
    });
    expect(res.status).toBe(201);
  };
  /** One commit on `branch`, through the files route (so it is a push, as on a real server). */
  const commit = async (
    branchName: string,
    path: string,
    content: string,
    message: string,
    who: Member = w.developer,
  ) => {
    const git = sandbox().ctx.git;
    const exists = readsFiles(git) && (await git.readFile(pid(), branchName, path)) !== undefined;
    const res = await who.as(exists ? 'PUT' : 'POST', `/projects/${pid()}/repository/files`, {
      body: { file_path: path, branch_name: branchName, content, commit_message: message },
    });
    expect(res.status).toBeLessThan(300);
    return (await sandbox().ctx.git.branch(pid(), branchName))!;
  };
  /** A feature branch with one new file and its merge request into master. */
  const featureMr = async (name: string, extra: Record<string, unknown> = {}, who: Member = w.developer) => {
    await branch(name);
    await commit(name, `${name}.txt`, `${name}\n`, `Add ${name}`);
    const res = await who.as('POST', mrs(), {
      body: { source_branch: name, target_branch: 'master', title: `Merge ${name}`, ...extra },
    });
    expect(res.status).toBe(200);
    return res.body;
  };
  const get = async (id: number) => (await w.owner.as('GET', `${mrs()}/${id}`)).body;
  const head = async (name: string) => (await sandbox().ctx.git.branch(pid(), name))?.id;
  const status = (sha: string, ref: string, state: string, name = 'ci') =>
    w.developer.as('POST', `/projects/${pid()}/statuses/${sha}`, { body: { state, ref, name } });

  describe('POST /projects/:id/merge_requests', () => {
    it('answers 200 (docs/api-v3.md#merge-requests) with the new merge request, fires `open` and records `opened`', async () => {
      await branch('create-1');
      const sha = (await commit('create-1', 'one.txt', '1\n', 'Add one')).id;
      const res = await w.developer.as('POST', mrs(), {
        body: {
          source_branch: 'create-1',
          target_branch: 'master',
          title: 'Add one',
          description: 'Adds a file',
          labels: 'review,feature',
          assignee_id: w.master.user.id,
        },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        project_id: pid(),
        title: 'Add one',
        description: 'Adds a file',
        state: 'opened',
        source_branch: 'create-1',
        target_branch: 'master',
        source_project_id: pid(),
        target_project_id: pid(),
        upvotes: 0,
        downvotes: 0,
        labels: ['feature', 'review'],
        milestone: null,
        work_in_progress: false,
        merge_when_build_succeeds: false,
        merge_status: 'can_be_merged',
        sha,
        subscribed: true,
        author: {
          id: w.developer.user.id,
          email: w.developer.user.email,
          created_at: w.developer.user.created_at,
        },
        assignee: { id: w.master.user.id },
      });
      const event = sandbox().db.data.events.find(
        (e) => e.target_type === 'MergeRequest' && e.target_id === res.body.id,
      );
      expect(event?.action_name).toBe('opened');
      expect(await w.deliveries()).toContainEqual(['Merge Request Hook', 'open']);
    });

    it('reads form-encoded bodies and marks work in progress', async () => {
      await branch('create-form');
      await commit('create-form', 'form.txt', 'f\n', 'Add form');
      const res = await w.developer.as('POST', mrs(), {
        form: { source_branch: 'create-form', target_branch: 'master', title: 'WIP: from a form' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ title: 'WIP: from a form', work_in_progress: true });
    });

    it.each([
      [
        'no source_branch',
        { target_branch: 'master', title: 't' },
        { message: '400 (Bad request) "source_branch" not given' },
      ],
      [
        'no target_branch',
        { source_branch: 'x', title: 't' },
        { message: '400 (Bad request) "target_branch" not given' },
      ],
      [
        'no title',
        { source_branch: 'x', target_branch: 'master' },
        { message: '400 (Bad request) "title" not given' },
      ],
      [
        'a source branch that does not exist',
        { source_branch: 'ghost', target_branch: 'master', title: 't' },
        { message: { source_branch: ['does not exist'] } },
      ],
      [
        'a target branch that does not exist',
        { source_branch: 'master', target_branch: 'ghost', title: 't' },
        { message: { target_branch: ['does not exist'] } },
      ],
    ])('answers 400 for %s', async (_name, body, expected) => {
      const res = await w.developer.as('POST', mrs(), { body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual(expected);
    });

    it('answers 422 listing the conflict for the same source and target branch (last 8.x releases)', async () => {
      const res = await w.developer.as('POST', mrs(), {
        body: { source_branch: 'master', target_branch: 'master', title: 't' },
      });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message: ['You can not use same project/branch for source and target'] });
      expect(sandbox().db.data.mergeRequests.some((mr) => mr.title === 't')).toBe(false);
    });

    it('answers 422 when an edit moves the target onto the source branch', async () => {
      const mr = await featureMr('onto-itself');
      const res = await w.developer.as('PUT', `${mrs()}/${mr.id}`, {
        body: { target_branch: 'onto-itself' },
      });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message: ['You can not use same project/branch for source and target'] });
      expect((await get(mr.id)).target_branch).toBe('master');
    });

    it('answers 409 for a second open merge request of the same branches', async () => {
      await featureMr('dup');
      const res = await w.developer.as('POST', mrs(), {
        body: { source_branch: 'dup', target_branch: 'master', title: 'again' },
      });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({
        message: 'Another open merge request already exists for this source branch',
      });
    });

    it.each([
      ['a reporter', 'reporter', 403],
      ['an outsider of the private project', 'outsider', 404],
    ] as const)('answers %s with %i', async (_name, role, code) => {
      const res = await w[role].as('POST', mrs(), {
        body: { source_branch: 'dup', target_branch: 'master', title: 't' },
      });
      expect(res.status).toBe(code);
    });
  });

  describe('reading', () => {
    let list: World;
    beforeAll(async () => {
      const { sb, call } = sandbox();
      list = await makeWorld(sb, call, 'mrl', { initialFiles: { 'README.md': README } });
      const lp = list.project.id;
      for (const name of ['a', 'b', 'c', 'd']) {
        await list.developer.as('POST', `/projects/${lp}/repository/branches`, {
          body: { branch_name: name, ref: 'master' },
        });
        await list.developer.as('POST', `/projects/${lp}/repository/files`, {
          body: {
            file_path: `${name}.txt`,
            branch_name: name,
            content: `${name}\n`,
            commit_message: `Add ${name}`,
          },
        });
        await list.developer.as('POST', `/projects/${lp}/merge_requests`, {
          body: { source_branch: name, target_branch: 'master', title: name },
        });
      }
      const ids = (
        await list.owner.as('GET', `/projects/${lp}/merge_requests`, { query: { sort: 'asc' } })
      ).body.map((m: { id: number }) => m.id);
      await list.owner.as('PUT', `/projects/${lp}/merge_requests/${ids[1]}/merge`);
      await list.owner.as('PUT', `/projects/${lp}/merge_requests/${ids[2]}`, {
        body: { state_event: 'close' },
      });
      await list.owner.as('PUT', `/projects/${lp}/merge_requests/${ids[3]}`, {
        body: { state_event: 'close' },
      });
      await list.owner.as('PUT', `/projects/${lp}/merge_requests/${ids[3]}`, {
        body: { state_event: 'reopen' },
      });
      await list.owner.as('PUT', `/projects/${lp}/merge_requests/${ids[0]}`, {
        body: { description: 'touched last' },
      });
    });
    const titles = (body: { title: string }[]) => body.map((m) => m.title);

    it.each([
      ['no filter: newest first', {}, ['d', 'c', 'b', 'a']],
      ['state=all&sort=asc', { state: 'all', sort: 'asc' }, ['a', 'b', 'c', 'd']],
      ['state=opened (reopened ones too)', { state: 'opened' }, ['d', 'a']],
      ['state=merged', { state: 'merged' }, ['b']],
      ['state=closed', { state: 'closed' }, ['c']],
      ['iid=3', { iid: 3 }, ['c']],
      ['order_by=updated_at', { order_by: 'updated_at' }, ['a', 'd', 'c', 'b']],
    ])('GET /projects/:id/merge_requests with %s', async (_name, query, expected) => {
      const res = await list.owner.as('GET', `/projects/${list.project.id}/merge_requests`, { query });
      expect(res.status).toBe(200);
      expect(titles(res.body)).toEqual(expected);
    });

    it('paginates with the headers docs/api-v3.md#pagination lists', async () => {
      const res = await list.owner.as('GET', `/projects/${list.project.id}/merge_requests`, {
        query: { per_page: 3 },
      });
      expect(res.body).toHaveLength(3);
      expect(res.headers.get('x-total')).toBe('4');
      expect(res.headers.get('x-total-pages')).toBe('2');
      expect(res.headers.get('x-next-page')).toBe('2');
    });

    it('shows a reopened merge request as `reopened` (real 8.x)', async () => {
      const res = await list.owner.as('GET', `/projects/${list.project.id}/merge_requests`, {
        query: { iid: 4 },
      });
      expect(res.body[0].state).toBe('reopened');
    });
  });

  it("answers 403 to a guest of a private project for its merge requests, listed or one (8.13 on: read_merge_request is a reporter's)", async () => {
    const mr = await featureMr('guest-reads');
    for (const path of [mrs(), `${mrs()}/${mr.id}`, `${mrs()}/${mr.id}/commits`, `${mrs()}/${mr.id}/changes`])
      expect(await w.guest.as('GET', path)).toMatchObject({
        status: 403,
        body: { message: '403 Forbidden' },
      });
    expect((await w.reporter.as('GET', `${mrs()}/${mr.id}`)).status).toBe(200);
  });

  describe('GET one, commits and changes: the path takes the global id, on the plural and the singular path', () => {
    it('finds a merge request by id; its iid answers 404', async () => {
      const mr = await featureMr('read-1');
      expect(mr.id).not.toBe(mr.iid);
      for (const segment of ['merge_requests', 'merge_request']) {
        const res = await w.reporter.as('GET', `/projects/${pid()}/${segment}/${mr.id}`);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ id: mr.id, iid: mr.iid, title: 'Merge read-1' });
      }
      // Its iid is the id of a merge request of another project.
      const res = await w.owner.as('GET', `${mrs()}/${mr.iid}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Not found' });
    });

    it('lists the commits it brings, newest first, and its diff', async () => {
      await branch('read-2');
      await commit('read-2', 'first.txt', 'first\n', 'First commit');
      await commit('read-2', 'README.md', 'line one\nline 2\nline three\n', 'Second commit\n\nWith a body');
      const mr = (
        await w.developer.as('POST', mrs(), {
          body: { source_branch: 'read-2', target_branch: 'master', title: 'two' },
        })
      ).body;
      for (const segment of ['merge_requests', 'merge_request']) {
        const commits = await w.owner.as('GET', `/projects/${pid()}/${segment}/${mr.id}/commits`);
        expect(commits.status).toBe(200);
        expect(commits.body.map((c: { title: string }) => c.title)).toEqual([
          'Second commit',
          'First commit',
        ]);
        expect(Object.keys(commits.body[0]).sort()).toEqual(
          ['author_email', 'author_name', 'created_at', 'id', 'message', 'short_id', 'title'].sort(),
        );
        expect(commits.body[0]).toMatchObject({ id: mr.sha, message: 'Second commit\n\nWith a body' });
        const changes = await w.owner.as('GET', `/projects/${pid()}/${segment}/${mr.id}/changes`);
        expect(changes.status).toBe(200);
        expect(changes.body).toMatchObject({ id: mr.id, title: 'two' });
        const byPath = Object.fromEntries(
          changes.body.changes.map((d: { new_path: string }) => [d.new_path, d]),
        );
        expect(byPath['first.txt']).toMatchObject({
          new_file: true,
          deleted_file: false,
          renamed_file: false,
        });
        expect(byPath['README.md'].diff).toContain('+line 2');
        expect(byPath['README.md'].diff).toContain('-line two');
      }
    });
  });

  describe('PUT /projects/:id/merge_requests/:merge_request_id', () => {
    it('edits fields and replaces the labels: 200 and `update`', async () => {
      const mr = await featureMr('edit-1', { labels: 'old' });
      const res = await w.developer.as('PUT', `${mrs()}/${mr.id}`, {
        body: { title: 'Renamed', description: 'Now described', labels: 'new,other' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        title: 'Renamed',
        description: 'Now described',
        labels: ['new', 'other'],
      });
      expect(await w.deliveries()).toContainEqual(['Merge Request Hook', 'update']);
    });

    it('takes label names with `?` and `&` (last 8.x releases) on create and edit', async () => {
      const mr = await featureMr('odd-labels', { labels: 'label?,label&foo' });
      expect([...mr.labels].sort()).toEqual(['label&foo', 'label?']);
      const res = await w.developer.as('PUT', `${mrs()}/${mr.id}`, { form: { labels: '?,&' } });
      expect(res.status).toBe(200);
      expect([...res.body.labels].sort()).toEqual(['&', '?']);
      const names = (await w.developer.as('GET', `/projects/${pid()}/labels`, { query: { per_page: 100 } }))
        .body;
      expect(names.map((l: { name: string }) => l.name)).toEqual(
        expect.arrayContaining(['?', '&', 'label?']),
      );
    });

    it('closes (closed) and reopens (reopened), each with its hook and event, on both paths', async () => {
      const mr = await featureMr('edit-2');
      const closed = await w.developer.as('PUT', `${mrs()}/${mr.id}`, { body: { state_event: 'close' } });
      expect(closed.status).toBe(200);
      expect(closed.body.state).toBe('closed');
      const reopened = await w.developer.as('PUT', `/projects/${pid()}/merge_request/${mr.id}`, {
        form: { state_event: 'reopen' },
      });
      expect(reopened.status).toBe(200);
      expect(reopened.body.state).toBe('reopened');
      const actions = sandbox()
        .db.data.events.filter((e) => e.target_type === 'MergeRequest' && e.target_id === mr.id)
        .map((e) => e.action_name);
      expect(actions).toEqual(['opened', 'closed', 'reopened']);
      const hooks = await w.deliveries();
      expect(hooks).toContainEqual(['Merge Request Hook', 'close']);
      expect(hooks).toContainEqual(['Merge Request Hook', 'reopen']);
    });

    it('merges with state_event=merge', async () => {
      const mr = await featureMr('edit-3');
      const res = await w.developer.as('PUT', `${mrs()}/${mr.id}`, { body: { state_event: 'merge' } });
      expect(res.status).toBe(200);
      expect(res.body.state).toBe('merged');
      const closeMerged = await w.developer.as('PUT', `${mrs()}/${mr.id}`, {
        body: { state_event: 'close' },
      });
      expect(closeMerged.body.state).toBe('merged');
    });

    it('answers 409 when reopening would duplicate an open merge request', async () => {
      const mr = await featureMr('edit-4');
      await w.developer.as('PUT', `${mrs()}/${mr.id}`, { body: { state_event: 'close' } });
      await w.developer.as('POST', mrs(), {
        body: { source_branch: 'edit-4', target_branch: 'master', title: 'again' },
      });
      const res = await w.developer.as('PUT', `${mrs()}/${mr.id}`, { body: { state_event: 'reopen' } });
      expect(res.status).toBe(409);
      expect((await get(mr.id)).state).toBe('closed');
    });

    it('retargets to an existing branch and refuses a missing one', async () => {
      const mr = await featureMr('edit-5');
      await branch('release');
      const ok = await w.developer.as('PUT', `${mrs()}/${mr.id}`, { body: { target_branch: 'release' } });
      expect(ok.body).toMatchObject({ target_branch: 'release', merge_status: 'can_be_merged' });
      const bad = await w.developer.as('PUT', `${mrs()}/${mr.id}`, { body: { target_branch: 'ghost' } });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ message: { target_branch: ['does not exist'] } });
    });

    it('answers 403 to a reporter who is neither author nor assignee, and 404 for an unknown id', async () => {
      const mr = await featureMr('edit-6');
      expect((await w.reporter.as('PUT', `${mrs()}/${mr.id}`, { body: { title: 'x' } })).status).toBe(403);
      expect((await w.developer.as('PUT', `${mrs()}/999999`, { body: { title: 'x' } })).status).toBe(404);
    });

    it('on an archived project: no member opens or edits a merge request, its author still edits but sets no label (8.x archived rules)', async () => {
      const { sb, call } = sandbox();
      const a = await makeWorld(sb, call, 'mrs-archived', { initialFiles: { 'README.md': README } });
      const path = `/projects/${a.project.id}/merge_requests`;
      await a.developer.as('POST', `/projects/${a.project.id}/repository/branches`, {
        body: { branch_name: 'late', ref: 'master' },
      });
      await a.developer.as('POST', `/projects/${a.project.id}/repository/files`, {
        body: { file_path: 'late.txt', branch_name: 'late', content: 'late\n', commit_message: 'Late' },
      });
      const mr = (
        await a.developer.as('POST', path, {
          body: { source_branch: 'late', target_branch: 'master', title: 'Before the archive' },
        })
      ).body;
      a.project.archived = true;
      expect((await a.master.as('PUT', `${path}/${mr.id}`, { body: { title: 'by a master' } })).status).toBe(
        403,
      );
      const byAuthor = await a.developer.as('PUT', `${path}/${mr.id}`, {
        body: { title: 'by its author', labels: 'archived-label' },
      });
      expect(byAuthor.status).toBe(200);
      expect(byAuthor.body).toMatchObject({ title: 'by its author', labels: [] });
      const opened = await a.master.as('POST', path, {
        body: { source_branch: 'late', target_branch: 'master', title: 'After the archive' },
      });
      expect(opened.status).toBe(403);
    });
  });

  describe('DELETE /projects/:id/merge_requests/:merge_request_id', () => {
    it('answers 403 below owner, 200 to the owner (then 404), and 404 for an absent one', async () => {
      const mr = await featureMr('delete-1');
      expect((await w.master.as('DELETE', `${mrs()}/${mr.id}`)).status).toBe(403);
      const res = await w.owner.as('DELETE', `${mrs()}/${mr.id}`);
      expect(res.status).toBe(200);
      expect(sandbox().db.data.mergeRequests.find((m) => m.id === mr.id)?.deleted).toBe(true);
      expect((await w.owner.as('GET', `${mrs()}/${mr.id}`)).status).toBe(404);
      const again = await w.owner.as('DELETE', `/projects/${pid()}/merge_request/${mr.id}`);
      expect(again.status).toBe(404);
      expect(again.body).toEqual({ message: '404 Not found' });
    });
  });

  describe('PUT .../merge', () => {
    it('merges several merge requests asked at once, each into the target as the others move it (8.x always ends its mergeability check on a verdict)', async () => {
      const many = [];
      for (let i = 0; i < 8; i++) many.push(await featureMr(`at-once-${i}`));
      // Every merge pushes master, which marks the others unchecked while their own check runs.
      const answers = await Promise.all(many.map((mr) => w.developer.as('PUT', `${mrs()}/${mr.id}/merge`)));
      expect(answers.map((res) => res.status)).toEqual(many.map(() => 200));
      for (const mr of many) expect((await get(mr.id)).state).toBe('merged');
    });

    it('merges for real: a merge commit with two parents on the target, `merge` hook, push of the target, `accepted`', async () => {
      const mr = await featureMr('merge-1');
      const before = await head('master');
      const source = await head('merge-1');
      const res = await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ state: 'merged', sha: source });
      const master = await sandbox().ctx.git.branch(pid(), 'master');
      expect(master?.parent_ids).toEqual([before, source]);
      expect(res.body.merge_commit_sha).toBe(master?.id);
      expect(master?.message).toBe(
        `Merge branch 'merge-1' into 'master'\n\nMerge merge-1\n\nSee merge request !${mr.iid}`,
      );
      expect(master?.author_name).toBe(w.developer.user.name);
      const hooks = await w.deliveries();
      expect(hooks).toContainEqual(['Merge Request Hook', 'merge']);
      const pushes = sandbox()
        .ctx.hooks.recent()
        .filter((d) => d.hookId === w.hook.id && d.event === 'Push Hook')
        .map((d) => [d.payload.ref, d.payload.before, d.payload.after]);
      expect(pushes).toContainEqual(['refs/heads/master', before, master?.id]);
      const event = sandbox().db.data.events.filter(
        (e) => e.target_type === 'MergeRequest' && e.target_id === mr.id,
      );
      expect(event.map((e) => e.action_name)).toEqual(['opened', 'accepted']);
      // What it brought stays readable from the merge commit.
      const commits = await w.owner.as('GET', `${mrs()}/${mr.id}/commits`);
      expect(commits.body.map((c: { id: string }) => c.id)).toEqual([source]);
    });

    it('takes merge_commit_message and should_remove_source_branch (form-encoded, singular path)', async () => {
      const mr = await featureMr('merge-2');
      const res = await w.developer.as('PUT', `/projects/${pid()}/merge_request/${mr.id}/merge`, {
        form: { merge_commit_message: 'Custom message', should_remove_source_branch: 'true' },
      });
      expect(res.status).toBe(200);
      expect((await sandbox().ctx.git.branch(pid(), 'master'))?.message).toBe('Custom message');
      expect(await head('merge-2')).toBeUndefined();
    });

    it('answers 405 `Branch cannot be merged` on a real conflict (docs/api-v3.md#merge-requests; real 8.3+ answer 406)', async () => {
      await branch('conflict-1');
      await commit(
        'conflict-1',
        'README.md',
        'line one\nline two from the branch\nline three\n',
        'Change line two',
      );
      const res = await w.developer.as('POST', mrs(), {
        body: { source_branch: 'conflict-1', target_branch: 'master', title: 'Conflicting' },
      });
      expect(res.body.merge_status).toBe('can_be_merged');
      await commit(
        'master',
        'README.md',
        'line one\nline two from master\nline three\n',
        'Change line two on master',
        w.master,
      );
      expect((await get(res.body.id)).merge_status).toBe('cannot_be_merged');
      const before = await head('master');
      const merge = await w.developer.as('PUT', `${mrs()}/${res.body.id}/merge`);
      expect(merge.status).toBe(405);
      expect(merge.body).toEqual({ message: 'Branch cannot be merged' });
      expect(await head('master')).toBe(before);
      expect((await get(res.body.id)).state).toBe('opened');
    });

    it.each([
      ['merged', 'merged'],
      ['closed', 'closed'],
      ['work in progress', 'wip'],
    ])('answers 405 `405 Method Not Allowed` when %s', async (_name, kind) => {
      const mr = await featureMr(`state-${kind}`, kind === 'wip' ? { title: '[WIP] not yet' } : {});
      if (kind === 'merged') await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`);
      if (kind === 'closed')
        await w.developer.as('PUT', `${mrs()}/${mr.id}`, { body: { state_event: 'close' } });
      const res = await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`);
      expect(res.status).toBe(405);
      expect(res.body).toEqual({ message: '405 Method Not Allowed' });
    });

    it('answers 409 when `sha` is not the source head, and merges when it is', async () => {
      const mr = await featureMr('sha-1');
      const sha = (await head('sha-1'))!;
      const wrong = await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`, { body: { sha: 'a'.repeat(40) } });
      expect(wrong.status).toBe(409);
      expect(wrong.body).toEqual({ message: `SHA does not match HEAD of source branch: ${sha}` });
      const right = await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`, { body: { sha } });
      expect(right.body.state).toBe('merged');
    });

    it('answers 401 to a reporter, and to a developer when the target branch is protected (masters merge)', async () => {
      const mr = await featureMr('perm-1');
      const reporter = await w.reporter.as('PUT', `${mrs()}/${mr.id}/merge`);
      expect(reporter.status).toBe(401);
      expect(reporter.body).toEqual({ message: '401 Unauthorized' });
      await branch('stable');
      await branch('perm-2');
      await commit('perm-2', 'perm.txt', 'p\n', 'Add perm');
      const toStable = (
        await w.developer.as('POST', mrs(), {
          body: { source_branch: 'perm-2', target_branch: 'stable', title: 'p' },
        })
      ).body;
      expect((await w.master.as('PUT', `/projects/${pid()}/repository/branches/stable/protect`)).status).toBe(
        200,
      );
      expect((await w.developer.as('PUT', `${mrs()}/${toStable.id}/merge`)).status).toBe(401);
      expect((await w.master.as('PUT', `${mrs()}/${toStable.id}/merge`)).body.state).toBe('merged');
    });

    it('lets a developer merge into a protected branch whose developers_can_merge is set, not push to it (8.x can_be_merged_by?)', async () => {
      await branch('dev-merges');
      await branch('perm-3');
      await commit('perm-3', 'perm3.txt', 'p\n', 'Add perm 3');
      const protect = await w.master.as('PUT', `/projects/${pid()}/repository/branches/dev-merges/protect`, {
        body: { developers_can_merge: true },
      });
      expect(protect.body).toMatchObject({
        protected: true,
        developers_can_push: false,
        developers_can_merge: true,
      });
      const toRelease = (
        await w.developer.as('POST', mrs(), {
          body: { source_branch: 'perm-3', target_branch: 'dev-merges', title: 'p3' },
        })
      ).body;
      const pushed = await w.developer.as('POST', `/projects/${pid()}/repository/files`, {
        body: { file_path: 'direct.txt', branch_name: 'dev-merges', content: 'd', commit_message: 'direct' },
      });
      expect(pushed.status).toBe(400);
      expect(pushed.body).toEqual({ message: 'You are not allowed to push into this branch' });
      expect((await w.developer.as('PUT', `${mrs()}/${toRelease.id}/merge`)).body.state).toBe('merged');
    });
  });

  describe('closes_issues', () => {
    it('lists the issues the description and the commit messages close, and merging closes them', async () => {
      const issue = async (title: string) =>
        (await w.owner.as('POST', `/projects/${pid()}/issues`, { body: { title } })).body;
      const one = await issue('closed by description');
      const two = await issue('closed by a commit');
      const untouched = await issue('only mentioned');
      await branch('closing');
      await commit('closing', 'fix.txt', 'fix\n', `Fix the thing\n\nFixes #${two.iid}`);
      const mr = (
        await w.developer.as('POST', mrs(), {
          body: {
            source_branch: 'closing',
            target_branch: 'master',
            title: 'Closing',
            description: `Closes #${one.iid}. See #${untouched.iid}.`,
          },
        })
      ).body;
      for (const segment of ['merge_requests', 'merge_request']) {
        const res = await w.owner.as('GET', `/projects/${pid()}/${segment}/${mr.id}/closes_issues`);
        expect(res.status).toBe(200);
        expect(res.body.map((i: { id: number }) => i.id).sort()).toEqual([one.id, two.id].sort());
      }
      await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`);
      const state = async (id: number) =>
        (await w.owner.as('GET', `/projects/${pid()}/issues/${id}`)).body.state;
      expect([await state(one.id), await state(two.id), await state(untouched.id)]).toEqual([
        'closed',
        'closed',
        'opened',
      ]);
      const notes = await w.owner.as('GET', `/projects/${pid()}/issues/${one.id}/notes`);
      expect(notes.body.at(-1).body).toBe(`Status changed to closed by !${mr.iid}`);
    });

    it('is empty for a merge request into another branch than the default one', async () => {
      const target = await w.owner.as('POST', `/projects/${pid()}/issues`, { body: { title: 'not closed' } });
      await branch('side');
      await branch('closing-side');
      await commit('closing-side', 'side.txt', 's\n', `Closes #${target.body.iid}`);
      const mr = (
        await w.developer.as('POST', mrs(), {
          body: { source_branch: 'closing-side', target_branch: 'side', title: 's' },
        })
      ).body;
      expect((await w.owner.as('GET', `${mrs()}/${mr.id}/closes_issues`)).body).toEqual([]);
    });
  });

  describe('merge when build succeeds', () => {
    it('arms on a pending build, stays armed on a failure, merges as the armer when every status of the head succeeded', async () => {
      const mr = await featureMr('mwbs-1');
      const sha = (await head('mwbs-1'))!;
      expect((await status(sha, 'mwbs-1', 'pending', 'ci')).status).toBe(201);
      expect((await status(sha, 'mwbs-1', 'pending', 'lint')).status).toBe(201);
      const armed = await w.master.as('PUT', `${mrs()}/${mr.id}/merge`, {
        body: { merge_when_build_succeeds: true },
      });
      expect(armed.status).toBe(200);
      expect(armed.body).toMatchObject({ state: 'opened', merge_when_build_succeeds: true });
      const rec = sandbox().db.data.mergeRequests.find((m) => m.id === mr.id);
      expect(rec?.merge_user_id).toBe(w.master.user.id);

      await status(sha, 'mwbs-1', 'success', 'lint');
      expect(await get(mr.id)).toMatchObject({ state: 'opened', merge_when_build_succeeds: true });
      await status(sha, 'mwbs-1', 'failed', 'ci');
      expect(await get(mr.id)).toMatchObject({ state: 'opened', merge_when_build_succeeds: true });
      // A retried build: a finished status never changes, a new one takes its place as the latest.
      await status(sha, 'mwbs-1', 'running', 'ci');
      expect((await get(mr.id)).state).toBe('opened');
      await status(sha, 'mwbs-1', 'success', 'ci');
      const merged = await get(mr.id);
      expect(merged).toMatchObject({ state: 'merged', merge_when_build_succeeds: false });
      const master = await sandbox().ctx.git.branch(pid(), 'master');
      expect(master?.parent_ids[1]).toBe(sha);
      expect(master?.author_name).toBe(w.master.user.name);
      expect(await w.deliveries()).toContainEqual(['Merge Request Hook', 'merge']);
    });

    it('is disarmed by the deletion of its source branch (a push too), without an update hook', async () => {
      const mr = await featureMr('mwbs-gone');
      await status((await head('mwbs-gone'))!, 'mwbs-gone', 'running');
      const armed = await w.master.as('PUT', `${mrs()}/${mr.id}/merge`, {
        body: { merge_when_build_succeeds: true },
      });
      expect(armed.body).toMatchObject({ merge_when_build_succeeds: true });
      const before = (await w.deliveries()).length;
      const gone = await w.developer.as('DELETE', `/projects/${pid()}/repository/branches/mwbs-gone`);
      expect(gone.status).toBe(200);
      await sandbox().ctx.hooks.idle();
      expect(await get(mr.id)).toMatchObject({ state: 'opened', merge_when_build_succeeds: false });
      expect((await w.deliveries()).slice(before)).not.toContainEqual(['Merge Request Hook', 'update']);
    });

    it('accepts the spelling of docs/api-v3.md#merge-requests, `merged_when_build_succeeds`', async () => {
      const mr = await featureMr('mwbs-2');
      await status((await head('mwbs-2'))!, 'mwbs-2', 'running');
      const res = await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`, {
        form: { merged_when_build_succeeds: 'true' },
      });
      expect(res.body).toMatchObject({ state: 'opened', merge_when_build_succeeds: true });
    });

    it('merges at once when the head commit has no status at all (8.x: no pipeline, nothing to wait for)', async () => {
      const mr = await featureMr('mwbs-3');
      const res = await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`, {
        body: { merge_when_build_succeeds: true },
      });
      expect(res.body).toMatchObject({ state: 'merged', merge_when_build_succeeds: false });
    });

    it('waits for the build of the current head: a success on an older commit merges nothing', async () => {
      const mr = await featureMr('mwbs-4');
      const old = (await head('mwbs-4'))!;
      await status(old, 'mwbs-4', 'pending');
      await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`, { body: { merge_when_build_succeeds: true } });
      const current = (await commit('mwbs-4', 'more.txt', 'more\n', 'More')).id;
      // A push to the source branch disarms it (8.3 on); it must be accepted again for the new head.
      expect(await get(mr.id)).toMatchObject({ state: 'opened', merge_when_build_succeeds: false });
      await status(current, 'mwbs-4', 'pending');
      await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`, { body: { merge_when_build_succeeds: true } });
      await status(old, 'mwbs-4', 'success');
      expect(await get(mr.id)).toMatchObject({ state: 'opened', merge_when_build_succeeds: true });
      await status(current, 'mwbs-4', 'success');
      const merged = await get(mr.id);
      expect(merged.state).toBe('merged');
      expect((await sandbox().ctx.git.branch(pid(), 'master'))?.parent_ids[1]).toBe(current);
    });
  });

  describe('cancel_merge_when_build_succeeds (PUT as docs/api-v3.md#merge-requests, POST as real servers)', () => {
    it.each(['PUT', 'POST'])('%s: 200 clears it, then 406 `406 Not Acceptable`', async (method) => {
      const name = `cancel-${method.toLowerCase()}`;
      const mr = await featureMr(name);
      await status((await head(name))!, name, 'pending');
      await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`, { body: { merge_when_build_succeeds: true } });
      const res = await w.developer.as(method, `${mrs()}/${mr.id}/cancel_merge_when_build_succeeds`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ state: 'opened', merge_when_build_succeeds: false });
      const again = await w.developer.as(
        method,
        `/projects/${pid()}/merge_request/${mr.id}/cancel_merge_when_build_succeeds`,
      );
      expect(again.status).toBe(406);
      expect(again.body).toEqual({ message: '406 Not Acceptable' });
      // Cancelled: a later success merges nothing.
      await status((await head(name))!, name, 'success');
      expect((await get(mr.id)).state).toBe('opened');
    });

    it.each([
      ['PUT', 'merged'],
      ['POST', 'merged'],
      ['PUT', 'closed'],
      ['POST', 'closed'],
    ])('%s on a %s merge request answers 405', async (method, kind) => {
      const mr = await featureMr(`cancel-${kind}-${method.toLowerCase()}`);
      if (kind === 'merged') await w.developer.as('PUT', `${mrs()}/${mr.id}/merge`);
      else await w.developer.as('PUT', `${mrs()}/${mr.id}`, { body: { state_event: 'close' } });
      const res = await w.developer.as(method, `${mrs()}/${mr.id}/cancel_merge_when_build_succeeds`);
      expect(res.status).toBe(405);
      expect(res.body).toEqual({ message: '405 Method Not Allowed' });
    });

    it('answers 401 to a reporter who is not the author', async () => {
      const mr = await featureMr('cancel-401');
      const res = await w.reporter.as('PUT', `${mrs()}/${mr.id}/cancel_merge_when_build_succeeds`);
      expect(res.status).toBe(401);
    });
  });

  describe('a push to the source branch', () => {
    it('fires `update` with oldrev, notes the commits and recomputes merge_status', async () => {
      const mr = await featureMr('push-1');
      const before = (await head('push-1'))!;
      const after = await commit(
        'push-1',
        'README.md',
        'line one\nline two pushed\nline three\n',
        'Push more',
      );
      await sandbox().ctx.hooks.idle();
      const update = sandbox()
        .ctx.hooks.recent()
        .filter((d) => d.hookId === w.hook.id && d.event === 'Merge Request Hook')
        .map((d) => d.payload.object_attributes as Record<string, unknown>)
        .find((a) => a.id === mr.id && a.action === 'update');
      expect(update?.oldrev).toBe(before);
      const notes = await w.owner.as('GET', `${mrs()}/${mr.id}/notes`);
      expect(notes.body.at(-1)).toMatchObject({
        system: true,
        body: `Added 1 commit:\n\n* ${after.short_id} - Push more`,
      });
      expect((await get(mr.id)).sha).toBe(after.id);
      // master changes the same line: the merge request can no longer be merged.
      await commit(
        'master',
        'README.md',
        'line one\nline two on master\nline three\n',
        'Master moves',
        w.master,
      );
      expect((await get(mr.id)).merge_status).toBe('cannot_be_merged');
    });
  });

  describe('subscription', () => {
    it('counts the author as subscribed: POST 304, DELETE 200, DELETE 304, POST 201 (both paths)', async () => {
      const mr = await featureMr('sub-1');
      const steps: [string, string, number, boolean | undefined][] = [
        ['POST', 'merge_requests', 304, undefined],
        ['DELETE', 'merge_request', 200, false],
        ['DELETE', 'merge_requests', 304, undefined],
        ['POST', 'merge_request', 201, true],
      ];
      for (const [method, segment, code, subscribed] of steps) {
        const res = await w.developer.as(method, `/projects/${pid()}/${segment}/${mr.id}/subscription`);
        expect([method, segment, res.status]).toEqual([method, segment, code]);
        if (subscribed !== undefined) expect(res.body.subscribed).toBe(subscribed);
      }
      expect((await w.master.as('GET', `${mrs()}/${mr.id}`)).body.subscribed).toBe(false);
      expect((await w.owner.as('POST', `${mrs()}/999999/subscription`)).status).toBe(404);
    });
  });

  describe('from a fork', () => {
    it('opens in the upstream project and merges the fork branch for real', async () => {
      const { db, ctx } = sandbox();
      const forker = w.developer;
      const namespace = db.data.namespaces.find((n) => n.kind === 'user' && n.owner_id === forker.user.id)!;
      const fork = await addProject(ctx, {
        name: 'mrs-fork',
        namespace_id: namespace.id,
        creator_id: forker.user.id,
        forked_from_id: pid(),
      });
      const forkPath = `/projects/${fork.id}`;
      await forker.as('POST', `${forkPath}/repository/branches`, {
        body: { branch_name: 'from-fork', ref: 'master' },
      });
      await forker.as('POST', `${forkPath}/repository/files`, {
        body: {
          file_path: 'fork.txt',
          branch_name: 'from-fork',
          content: 'fork\n',
          commit_message: 'From the fork',
        },
      });
      const res = await forker.as('POST', `${forkPath}/merge_requests`, {
        body: {
          source_branch: 'from-fork',
          target_branch: 'master',
          title: 'Fork work',
          target_project_id: pid(),
        },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        project_id: pid(),
        source_project_id: fork.id,
        target_project_id: pid(),
      });
      const merged = await w.master.as('PUT', `${mrs()}/${res.body.id}/merge`);
      expect(merged.body.state).toBe('merged');
      const log = await ctx.git.log(pid(), 'master', { limit: 2 });
      expect(log.map((c) => c.title)).toEqual([
        `Merge branch 'from-fork' of ${forker.user.username}/mrs-fork into 'master'`,
        'From the fork',
      ]);

      // The other way round: the upstream is not a fork of the fork.
      const notFork = await forker.as('POST', mrs(), {
        body: { source_branch: 'master', target_branch: 'master', title: 't', target_project_id: fork.id },
      });
      expect(notFork.status).toBe(422);
      expect(notFork.body).toEqual({ message: ['Source project is not a fork of target project'] });
    });

    it("a guest's merge request from a fork carries no label, not even an existing one, and creates none (8.x filter_params on the target)", async () => {
      const { db, ctx } = sandbox();
      await featureMr('guest-known-label', { labels: 'known-to-guest' });
      const guest = w.guest;
      const namespace = db.data.namespaces.find((n) => n.kind === 'user' && n.owner_id === guest.user.id)!;
      const fork = await addProject(ctx, {
        name: 'mrs-guest-fork',
        namespace_id: namespace.id,
        creator_id: guest.user.id,
        forked_from_id: pid(),
      });
      const forkPath = `/projects/${fork.id}`;
      await guest.as('POST', `${forkPath}/repository/branches`, {
        body: { branch_name: 'guest', ref: 'master' },
      });
      await guest.as('POST', `${forkPath}/repository/files`, {
        body: { file_path: 'guest.txt', branch_name: 'guest', content: 'g\n', commit_message: 'Guest work' },
      });
      const res = await guest.as('POST', `${forkPath}/merge_requests`, {
        body: {
          source_branch: 'guest',
          target_branch: 'master',
          title: 'From a guest',
          target_project_id: pid(),
          labels: 'known-to-guest,made-by-guest',
        },
      });
      expect(res.status).toBe(200);
      expect(res.body.labels).toEqual([]);
      const edited = await guest.as('PUT', `${mrs()}/${res.body.id}`, {
        body: { labels: 'edited-by-guest' },
      });
      expect(edited.status).toBe(200);
      const labels = await w.owner.as('GET', `/projects/${pid()}/labels`, { query: { per_page: 100 } });
      const names = labels.body.map((l: { name: string }) => l.name);
      expect(names).toContain('known-to-guest');
      expect(names).not.toContain('made-by-guest');
      expect(names).not.toContain('edited-by-guest');
    });
  });
});
