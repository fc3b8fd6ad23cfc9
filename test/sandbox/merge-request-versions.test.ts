/**
 * The merge request versions API of 8.12 and later (docs/api-v3.md#merge-request-versions): who may
 * read it, its paths and refusals, its pages, the order and precision of `created_at` (what tells
 * which version a comment was written on), and a data file written before the sandbox kept versions.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { makeWorld, type Member, type World } from '../helpers/issuable-world.ts';
import { useSandbox } from '../helpers/sandbox.ts';

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('sandbox: the merge request versions API', () => {
  // One millisecond further at each reading: every record gets its own instant, in the order made.
  let tick = 0;
  const sandbox = useSandbox({ clock: () => new Date(Date.UTC(2016, 6, 26, 14, 44, 48, 926) + tick++) });
  let priv: World;
  let pub: World;
  let mrId = 0;
  let otherMrId = 0;
  const heads: string[] = [];

  async function featureMr(w: World, name: string): Promise<number> {
    const pid = w.project.id;
    await w.developer.as('POST', `/projects/${pid}/repository/branches`, {
      body: { branch_name: name, ref: 'master' },
    });
    const commit = async (file: string) => {
      await w.developer.as('POST', `/projects/${pid}/repository/files`, {
        body: { file_path: file, branch_name: name, content: `${file}\n`, commit_message: `Add ${file}` },
      });
      heads.push((await sandbox().ctx.git.branch(pid, name))!.id);
    };
    await commit(`${name}-1.txt`);
    const res = await w.developer.as('POST', `/projects/${pid}/merge_requests`, {
      body: { source_branch: name, target_branch: 'master', title: name },
    });
    expect(res.status).toBe(200);
    await commit(`${name}-2.txt`);
    await commit(`${name}-3.txt`);
    return res.body.id;
  }

  beforeAll(async () => {
    const { sb, call } = sandbox();
    priv = await makeWorld(sb, call, 'verapi', { visibility_level: 0 });
    pub = await makeWorld(sb, call, 'verpub', { visibility_level: 20 });
    mrId = await featureMr(priv, 'three');
    otherMrId = await featureMr(priv, 'other');
  });

  const list = (who: Member, id = mrId, query: Record<string, number> = {}, segment = 'merge_requests') =>
    who.as('GET', `/projects/${priv.project.id}/${segment}/${id}/versions`, { query });

  it('lists the versions newest first, ids and created_at (milliseconds, UTC) in the order they were made', async () => {
    const res = await list(priv.reporter);
    expect(res.status).toBe(200);
    const versions = res.body as { id: number; created_at: string; head_commit_sha: string }[];
    expect(versions.map((v) => v.head_commit_sha)).toEqual([heads[2], heads[1], heads[0]]);
    for (const v of versions) expect(v.created_at).toMatch(ISO_MS);
    for (let i = 1; i < versions.length; i++) {
      expect(versions[i]!.id).toBeLessThan(versions[i - 1]!.id);
      expect(versions[i]!.created_at < versions[i - 1]!.created_at).toBe(true);
    }
  });

  it("tells the head a comment was written on: the last version made before the comment's created_at", async () => {
    const pid = pub.project.id;
    const name = 'seen';
    await pub.developer.as('POST', `/projects/${pid}/repository/branches`, {
      body: { branch_name: name, ref: 'master' },
    });
    await pub.developer.as('POST', `/projects/${pid}/repository/files`, {
      body: { file_path: 'seen.txt', branch_name: name, content: 'seen\n', commit_message: 'Seen' },
    });
    const seen = (await sandbox().ctx.git.branch(pid, name))!.id;
    const mr = (
      await pub.developer.as('POST', `/projects/${pid}/merge_requests`, {
        body: { source_branch: name, target_branch: 'master', title: name },
      })
    ).body;
    const comment = (
      await pub.master.as('POST', `/projects/${pid}/merge_requests/${mr.id}/notes`, {
        body: { body: '/hookbot merge' },
      })
    ).body as { created_at: string };
    await pub.developer.as('POST', `/projects/${pid}/repository/files`, {
      body: { file_path: 'later.txt', branch_name: name, content: 'later\n', commit_message: 'Later' },
    });
    const versions = (await pub.outsider.as('GET', `/projects/${pid}/merge_requests/${mr.id}/versions`))
      .body as {
      created_at: string;
      head_commit_sha: string;
    }[];
    expect(versions).toHaveLength(2);
    const current = versions.find((v) => v.created_at <= comment.created_at);
    expect(current?.head_commit_sha).toBe(seen);
    expect(versions[0]!.created_at > comment.created_at).toBe(true);
  });

  it("the bot's client reads both (its schemas take the sandbox's answers)", async () => {
    const client = createClient({ baseUrl: sandbox().sb.url, token: priv.reporter.user.private_token });
    const versions = [];
    for await (const v of client.mergeRequests.versions(priv.project.id, mrId)) versions.push(v);
    expect(versions.map((v) => v.head_commit_sha)).toEqual([heads[2], heads[1], heads[0]]);
    const one = await client.mergeRequests.version(priv.project.id, mrId, versions[0]!.id);
    expect(one.commits.map((c) => c.id)).toEqual([heads[2], heads[1], heads[0]]);
    expect(one.diffs).toHaveLength(3);
  });

  it('pages as the other lists: per_page and page, X-Total, Link', async () => {
    const res = await list(priv.reporter, mrId, { per_page: 1, page: 2 });
    expect(res.status).toBe(200);
    expect(res.body.map((v: { head_commit_sha: string }) => v.head_commit_sha)).toEqual([heads[1]]);
    expect(res.headers.get('x-total')).toBe('3');
    expect(res.headers.get('x-next-page')).toBe('3');
    expect(res.headers.get('link')).toContain('rel="next"');
  });

  it.each([
    ['owner', 200],
    ['master', 200],
    ['developer', 200],
    ['reporter', 200],
    ['guest', 403],
    ['outsider', 404],
  ] as const)(
    'on a private project: %s answers %i, for the list and for one version',
    async (role, status) => {
      const who = priv[role];
      const res = await list(who);
      expect(res.status).toBe(status);
      const versionId = (await list(priv.reporter)).body[0].id;
      const one = await who.as(
        'GET',
        `/projects/${priv.project.id}/merge_requests/${mrId}/versions/${versionId}`,
      );
      expect(one.status).toBe(status);
      if (status === 403) expect(one.body).toEqual({ message: '403 Forbidden' });
      if (status === 404) expect(one.body).toEqual({ message: '404 Project Not Found' });
    },
  );

  it('on a public project anyone signed in reads them', async () => {
    const id = await featureMr(pub, 'public');
    expect(
      (await pub.outsider.as('GET', `/projects/${pub.project.id}/merge_requests/${id}/versions`)).status,
    ).toBe(200);
    expect(
      (await pub.guest.as('GET', `/projects/${pub.project.id}/merge_requests/${id}/versions`)).status,
    ).toBe(200);
  });

  it('answers only on the plural path: the singular one is an unknown route there, as on 8.x', async () => {
    const res = await list(priv.reporter, mrId, {}, 'merge_request');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: '404 Not Found' });
  });

  it("refuses another merge request's version, an unknown one, a malformed id, an unknown or deleted merge request", async () => {
    const pid = priv.project.id;
    const theirs = (await list(priv.reporter, otherMrId)).body[0].id;
    const one = (mr: number, version: string | number) =>
      priv.reporter.as('GET', `/projects/${pid}/merge_requests/${mr}/versions/${version}`);
    expect(await one(mrId, theirs)).toMatchObject({ status: 404, body: { message: '404 Not found' } });
    expect(await one(mrId, 999_999)).toMatchObject({ status: 404, body: { message: '404 Not found' } });
    expect(await one(mrId, 'latest')).toMatchObject({
      status: 400,
      body: { error: 'version_id is invalid' },
    });
    expect((await list(priv.reporter, 999_999)).status).toBe(404);
    const gone = await featureMr(priv, 'gone');
    expect((await priv.owner.as('DELETE', `/projects/${pid}/merge_requests/${gone}`)).status).toBe(200);
    expect((await list(priv.reporter, gone)).status).toBe(404);
  });
});

describe('sandbox: versions and the data file', () => {
  it('loads a data file written before versions were kept: each open merge request gets one at start, saved with the rest', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'hookbot-versions-data-'));
    try {
      const file = path.join(dir, 'sandbox.json');
      const first = await startSandbox({
        dataFile: file,
        seed: 'demo',
        adminToken: 'v-root',
        log: () => undefined,
      });
      await first.close();
      // What an earlier version wrote: no `mergeRequestDiffs`.
      const old = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown> & {
        seq: Record<string, number>;
      };
      delete old.mergeRequestDiffs;
      delete old.seq.mergeRequestDiffs;
      await writeFile(file, JSON.stringify(old));

      const second = await startSandbox({ dataFile: file, log: () => undefined });
      try {
        const [mr] = second.ctx.db.data.mergeRequests;
        const head = (await second.ctx.git.branch(mr!.source_project_id, mr!.source_branch))!.id;
        const res = await fetch(
          `${second.apiUrl}/projects/${mr!.project_id}/merge_requests/${mr!.id}/versions`,
          {
            headers: { 'private-token': 'v-root' },
          },
        );
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual([
          expect.objectContaining({
            id: 1,
            head_commit_sha: head,
            merge_request_id: mr!.id,
            state: 'collected',
          }),
        ]);
      } finally {
        await second.close();
      }
      const saved = JSON.parse(await readFile(file, 'utf8')) as { mergeRequestDiffs: unknown[] };
      expect(saved.mergeRequestDiffs).toHaveLength(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
