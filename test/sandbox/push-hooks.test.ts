import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notify, type PushEvent } from '../../src/sandbox/context.ts';
import type { HookRec, ProjectRec, UserRec } from '../../src/sandbox/db.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { BLANK_SHA } from '../../src/sandbox/payloads/index.ts';
import { useSandbox } from '../helpers/sandbox.ts';

interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

describe('push listener: Push Hook, Tag Push Hook and the activity event', () => {
  const ctx = useSandbox();
  let project: ProjectRec;
  let pusher: UserRec;
  let master = '';
  const deliveries: Delivery[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({
        path: req.url ?? '',
        headers: req.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      });
      res.end('ok');
    });
  });

  function addHook(url: string, flags: Partial<HookRec>): void {
    const { db } = ctx();
    db.data.hooks.push({
      id: db.nextId('hooks'),
      project_id: project.id,
      url,
      token: null,
      push_events: false,
      issues_events: false,
      merge_requests_events: false,
      tag_push_events: false,
      note_events: false,
      build_events: false,
      pipeline_events: false,
      enable_ssl_verification: true,
      created_at: db.now(),
      ...flags,
    });
  }

  async function push(event: Omit<PushEvent, 'project' | 'user'>) {
    const before = ctx().db.data.events.length;
    await notify(ctx().ctx.on.push, { project, user: pusher, ...event });
    await ctx().ctx.hooks.idle();
    return {
      sent: deliveries.splice(0),
      events: ctx().db.data.events.slice(before),
    };
  }

  beforeAll(async () => {
    const { db, ctx: sandbox } = ctx();
    pusher = addUser(db, { username: 'pusher', name: 'Pat Pusher' });
    const group = addGroup(db, { name: 'Acme', path: 'acme', owner_id: 1 });
    project = await addProject(sandbox, {
      name: 'Web',
      path: 'web',
      namespace_id: group.id,
      creator_id: 1,
      description: 'The web front end',
      initialFiles: { 'README.md': '# Web\n' },
    });
    master = (await sandbox.git.branch(project.id, 'master'))!.id;
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const { port } = receiver.address() as AddressInfo;
    addHook(`http://127.0.0.1:${port}/push`, { push_events: true });
    addHook(`http://127.0.0.1:${port}/tags`, { tag_push_events: true });
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => {
      receiver.closeAllConnections();
      receiver.close(() => resolve());
    });
  });

  it('sends the Push Hook and records a `pushed to` event with the push data', async () => {
    const { ctx: sandbox } = ctx();
    await sandbox.git.createBranch(project.id, 'feature', 'master');
    const commit = await sandbox.git.commitFile(project.id, {
      branch: 'feature',
      path: 'app.js',
      content: 'x',
      message: 'Add app',
      author: { name: 'Pat Pusher', email: pusher.email },
      mode: 'create',
    });

    const { sent, events } = await push({ ref: 'refs/heads/feature', before: master, after: commit.id });

    expect(sent.map((d) => [d.path, d.headers['x-gitlab-event']])).toEqual([['/push', 'Push Hook']]);
    const payload = sent[0]!.body;
    expect(payload).toMatchObject({
      object_kind: 'push',
      before: master,
      after: commit.id,
      ref: 'refs/heads/feature',
      user_name: 'Pat Pusher',
      total_commits_count: 1,
    });
    expect(payload.commits.map((c: { id: string }) => c.id)).toEqual([commit.id]);

    expect(events).toEqual([
      {
        id: expect.any(Number),
        project_id: project.id,
        author_id: pusher.id,
        action_name: 'pushed to',
        target_id: null,
        target_type: null,
        target_title: null,
        title: null,
        note_id: null,
        created_at: expect.any(String),
        data: {
          before: master,
          after: commit.id,
          ref: 'refs/heads/feature',
          user_id: pusher.id,
          user_name: 'Pat Pusher',
          repository: {
            name: 'Web',
            url: payload.repository.url,
            description: 'The web front end',
            homepage: `${ctx().sb.url}/acme/web`,
          },
          commits: [
            {
              id: commit.id,
              message: commit.message,
              timestamp: commit.committed_date,
              url: `${ctx().sb.url}/acme/web/commit/${commit.id}`,
              author: { name: 'Pat Pusher', email: pusher.email },
            },
          ],
          total_commits_count: 1,
        },
      },
    ]);
    expect(project.last_activity_at).toBe(events[0]!.created_at);
  });

  it.each([
    ['a new branch', 'pushed new', () => ({ before: BLANK_SHA, after: master })],
    ['a removed branch', 'deleted', () => ({ before: master, after: BLANK_SHA })],
  ])('records %s as `%s`', async (_name, action, shas) => {
    const { sent, events } = await push({ ref: 'refs/heads/other', ...shas() });
    expect(sent.map((d) => d.headers['x-gitlab-event'])).toEqual(['Push Hook']);
    expect(events.map((e) => e.action_name)).toEqual([action]);
  });

  it('sends a tag push as Tag Push Hook, only to hooks that want tag pushes', async () => {
    const { sent, events } = await push({ ref: 'refs/tags/v1.0.0', before: BLANK_SHA, after: master });
    expect(sent.map((d) => [d.path, d.headers['x-gitlab-event'], d.body.object_kind])).toEqual([
      ['/tags', 'Tag Push Hook', 'tag_push'],
    ]);
    expect(events.map((e) => [e.action_name, e.data?.ref])).toEqual([['pushed new', 'refs/tags/v1.0.0']]);
  });
});
