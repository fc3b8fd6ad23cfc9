/**
 * Who may push what, as 8.x servers judge a push (`Gitlab::GitAccess`, `Gitlab::Checks::ChangeAccess`,
 * `Gitlab::UserAccess`): one test per row of the table in docs/sandbox.md ("Who may push what"), each
 * trying its operation as every role over HTTP and over SSH with the real git client, and checking
 * the exact refusal git shows and the ref on the server afterwards. The table here and the one in the
 * docs are compared cell for cell.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRec, UserRec } from '../../src/sandbox/db.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { pushWorkIdle } from '../../src/sandbox/git-access.ts';
import { DEVELOPER, GUEST, MASTER, REPORTER } from '../../src/sandbox/permissions.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { gitSshCommand, knownHostsFile, sshKeyPair, type KeyPair } from '../helpers/ssh-keys.ts';

const ROLES = [
  'non-member, private project',
  'non-member, public project',
  'guest',
  'reporter',
  'developer',
  'master',
  'owner',
] as const;
type Role = (typeof ROLES)[number];
type Transport = 'http' | 'ssh';

/** What git shows: `allowed`, or the refusal (over HTTP a refused command is only an HTTP status). */
type Outcome = 'allowed' | 'not found' | 'no push' | string;

const FORCE = 'GitLab: You are not allowed to force push code to a protected branch on this project.';
const DELETE = 'GitLab: You are not allowed to delete protected branches from this project.';
const PROTECTED = 'GitLab: You are not allowed to push code to protected branches on this project.';
const TAGS = 'GitLab: You are not allowed to change existing tags on this project.';

/** The command-level refusals, which differ by transport. */
const SHOWN: Record<'not found' | 'no push', Record<Transport, RegExp>> = {
  'not found': {
    http: /repository '[^']*' not found/,
    ssh: /GitLab: The project you were looking for could not be found\./,
  },
  'no push': {
    http: /The requested URL returned error: 403/,
    ssh: /GitLab: You are not allowed to push code to this project\./,
  },
};

/** Where the pushed ref starts (absent, at the base commit, or one commit ahead of it). */
type Start = 'absent' | 'base' | 'ahead';
interface Row {
  operation: string;
  kind: 'heads' | 'tags';
  protected?: { developers_can_push: boolean };
  start: Start;
  /** What is pushed: a commit that fast-forwards, one that does not (forced), or nothing (deletion). */
  push: 'ahead' | 'diverged' | 'delete' | 'base';
  outcomes: Record<Role, Outcome>;
}

const NOBODY_BELOW_DEVELOPER = {
  'non-member, private project': 'not found',
  'non-member, public project': 'no push',
  guest: 'no push',
  reporter: 'no push',
} as const;
const everyoneFrom = (developer: Outcome, master: Outcome, owner: Outcome) =>
  ({ ...NOBODY_BELOW_DEVELOPER, developer, master, owner }) satisfies Record<Role, Outcome>;

const ROWS: Row[] = [
  {
    operation: 'push a new branch',
    kind: 'heads',
    start: 'absent',
    push: 'ahead',
    outcomes: everyoneFrom('allowed', 'allowed', 'allowed'),
  },
  {
    operation: 'push to a branch',
    kind: 'heads',
    start: 'base',
    push: 'ahead',
    outcomes: everyoneFrom('allowed', 'allowed', 'allowed'),
  },
  {
    operation: 'force-push a branch',
    kind: 'heads',
    start: 'ahead',
    push: 'diverged',
    outcomes: everyoneFrom('allowed', 'allowed', 'allowed'),
  },
  {
    operation: 'delete a branch',
    kind: 'heads',
    start: 'base',
    push: 'delete',
    outcomes: everyoneFrom('allowed', 'allowed', 'allowed'),
  },
  {
    operation: 'push to a protected branch',
    kind: 'heads',
    protected: { developers_can_push: false },
    start: 'base',
    push: 'ahead',
    outcomes: everyoneFrom(PROTECTED, 'allowed', 'allowed'),
  },
  {
    operation: 'push to a protected branch that developers may push to',
    kind: 'heads',
    protected: { developers_can_push: true },
    start: 'base',
    push: 'ahead',
    outcomes: everyoneFrom('allowed', 'allowed', 'allowed'),
  },
  {
    operation: 'force-push a protected branch',
    kind: 'heads',
    protected: { developers_can_push: true },
    start: 'ahead',
    push: 'diverged',
    outcomes: everyoneFrom(FORCE, FORCE, FORCE),
  },
  {
    operation: 'delete a protected branch',
    kind: 'heads',
    protected: { developers_can_push: true },
    start: 'base',
    push: 'delete',
    outcomes: everyoneFrom(DELETE, DELETE, DELETE),
  },
  {
    operation: 'push a new tag',
    kind: 'tags',
    start: 'absent',
    push: 'base',
    outcomes: everyoneFrom('allowed', 'allowed', 'allowed'),
  },
  {
    operation: 'move a tag',
    kind: 'tags',
    start: 'base',
    push: 'ahead',
    outcomes: everyoneFrom(TAGS, 'allowed', 'allowed'),
  },
  {
    operation: 'delete a tag',
    kind: 'tags',
    start: 'base',
    push: 'delete',
    outcomes: everyoneFrom(TAGS, 'allowed', 'allowed'),
  },
];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let home = '';
function git(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      'git',
      args,
      {
        cwd,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: home,
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_TERMINAL_PROMPT: '0',
          GIT_AUTHOR_NAME: 'Tester',
          GIT_AUTHOR_EMAIL: 'tester@example.com',
          GIT_COMMITTER_NAME: 'Tester',
          GIT_COMMITTER_EMAIL: 'tester@example.com',
          LC_ALL: 'C',
          ...env,
        },
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

async function pool<T>(items: T[], size: number, work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: size }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
    }),
  );
}

// Each row runs 14 real pushes (7 roles, 2 transports): allow for a slow, busy machine.
describe('who may push what (8.x rules), over HTTP and SSH', { timeout: 120_000 }, () => {
  const sb = useSandbox({ sshPort: 0 });
  let knownHosts = '';
  let local = '';
  const users = {} as Record<Role, UserRec>;
  const keys = {} as Record<Role, KeyPair>;
  let publicProject: ProjectRec;
  let privateProject: ProjectRec;
  const commits = { base: '', ahead: '', diverged: '', next: '' };

  const slug = (role: Role) => role.replace(/[^a-z]+/g, '-');
  const projectOf = (role: Role) => (role === 'non-member, private project' ? privateProject : publicProject);

  function url(role: Role, transport: Transport, project = projectOf(role)): string {
    const owner = users.owner.username;
    if (transport === 'ssh') return `ssh://git@127.0.0.1:${sb().sb.ssh!.port}/${owner}/${project.path}.git`;
    const address = new URL(`${sb().sb.url}/${owner}/${project.path}.git`);
    address.username = users[role].username;
    address.password = `${users[role].username}-password`;
    return address.toString();
  }

  const push = (role: Role, transport: Transport, refspec: string) =>
    git(
      local,
      ['push', url(role, transport), refspec],
      transport === 'ssh' ? { GIT_SSH_COMMAND: gitSshCommand(keys[role].keyFile, knownHosts) } : {},
    );

  beforeAll(async () => {
    const { ctx, db, call } = sb();
    home = await mkdtemp(path.join(tmpdir(), 'hookbot-push-rules-'));
    knownHosts = await knownHostsFile(home, 'known_hosts', sb().sb.ssh!.knownHostsLine);
    const names: Record<Role, string> = {
      'non-member, private project': 'pr-stranger-private',
      'non-member, public project': 'pr-stranger',
      guest: 'pr-guest',
      reporter: 'pr-reporter',
      developer: 'pr-developer',
      master: 'pr-master',
      owner: 'pr-owner',
    };
    for (const role of ROLES) {
      users[role] = addUser(db, { username: names[role], password: `${names[role]}-password` });
      keys[role] = await sshKeyPair(home, `id_${slug(role)}`);
      const added = await call('POST', `/users/${users[role].id}/keys`, {
        body: { title: role, key: keys[role].publicKey },
      });
      expect(added.status).toBe(201);
    }
    const namespace_id = ensureUserNamespace(db, users.owner).id;
    publicProject = await addProject(ctx, {
      name: 'push-rules',
      namespace_id,
      creator_id: users.owner.id,
      visibility_level: 20,
      initialFiles: { 'README.md': 'hello\n' },
    });
    privateProject = await addProject(ctx, {
      name: 'push-rules-private',
      namespace_id,
      creator_id: users.owner.id,
      visibility_level: 0,
      initialFiles: { 'README.md': 'hello\n' },
    });
    for (const [role, level] of [
      ['guest', GUEST],
      ['reporter', REPORTER],
      ['developer', DEVELOPER],
      ['master', MASTER],
    ] as const)
      db.data.members.push({
        project_id: publicProject.id,
        user_id: users[role].id,
        access_level: level,
        created_at: db.now(),
      });

    // One local repository holds the three commits every push is made of.
    local = path.join(home, 'local');
    expect((await git(home, ['init', '--quiet', local])).code).toBe(0);
    expect((await git(local, ['fetch', '--quiet', url('owner', 'http'), 'master'])).code).toBe(0);
    commits.base = (await git(local, ['rev-parse', 'FETCH_HEAD'])).stdout.trim();
    const tree = `${commits.base}^{tree}`;
    const child = async (message: string) =>
      (await git(local, ['commit-tree', tree, '-p', commits.base, '-m', message])).stdout.trim();
    commits.ahead = await child('ahead');
    commits.diverged = await child('diverged');
    commits.next = (await git(local, ['commit-tree', tree, '-p', commits.ahead, '-m', 'next'])).stdout.trim();
  });
  afterAll(async () => {
    await rm(home, { recursive: true, force: true });
  });

  it.each(ROWS.map((row) => [row.operation, row] as const))('%s', async (_operation, row) => {
    const { ctx, call } = sb();
    const rowSlug = row.operation.replace(/[^a-z]+/g, '-');
    const cells = ROLES.flatMap((role) =>
      (['http', 'ssh'] as const).map((transport) => ({ role, transport })),
    );
    const refOf = (role: Role, transport: Transport) =>
      `refs/${row.kind}/${rowSlug}-${slug(role)}-${transport}`;

    // The refs as the row needs them, pushed by the owner in one push, then protected as asked.
    const setup = cells.map(({ role, transport }) =>
      row.start === 'absent' ? '' : `${commits[row.start]}:${refOf(role, transport)}`,
    );
    for (const project of [publicProject, privateProject]) {
      const refspecs = setup.filter((refspec, i) => refspec && projectOf(cells[i]!.role) === project);
      if (refspecs.length === 0) continue;
      const pushed = await git(local, ['push', '--quiet', url('owner', 'http', project), ...refspecs]);
      expect(pushed.stderr).toBe('');
      expect(pushed.code).toBe(0);
    }
    if (row.protected)
      for (const { role, transport } of cells) {
        const name = refOf(role, transport).slice('refs/heads/'.length);
        const res = await call(
          'PUT',
          `/projects/${projectOf(role).id}/repository/branches/${encodeURIComponent(name)}/protect`,
          { body: row.protected },
        );
        expect(res.status).toBe(200);
      }

    const seen: Record<string, { shown: string; ref: string | undefined }> = {};
    const expected: typeof seen = {};
    await pool(cells, 4, async ({ role, transport }) => {
      const ref = refOf(role, transport);
      const value = row.push === 'delete' ? '' : commits[row.push];
      // git itself refuses to move a tag or rewind a branch unless told to force.
      const force = row.push === 'diverged' || (row.kind === 'tags' && row.start !== 'absent');
      const refspec = `${force && value ? '+' : ''}${value}:${ref}`;
      const before = row.start === 'absent' ? undefined : commits[row.start];
      const result = await push(role, transport, refspec);
      const outcome = row.outcomes[role];
      const after = await ctx.git.resolve(projectOf(role).id, ref);
      const key = `${role} over ${transport}`;
      let shown: string;
      if (result.code === 0) shown = 'allowed';
      else if (outcome === 'not found' || outcome === 'no push')
        shown = SHOWN[outcome][transport].test(result.stderr) ? outcome : result.stderr;
      else {
        // A refusal of the pre-receive hook: git shows its line as `remote: ...` and rejects the ref.
        const line = /^remote: (GitLab: .*?)\s*$/m.exec(result.stderr)?.[1];
        shown = line && /\(pre-receive hook declined\)/.test(result.stderr) ? line : result.stderr;
      }
      seen[key] = { shown, ref: after };
      expected[key] = { shown: outcome, ref: outcome === 'allowed' ? value || undefined : before };
    });
    expect(seen).toEqual(expected);
  });

  it.each([
    // level, protected, developers_can_push, a developer's fast-forward, a developer's force push
    [0, false, false, 'allowed', 'allowed'],
    [1, true, true, 'allowed', FORCE],
    [2, true, false, PROTECTED, FORCE],
  ] as const)(
    'default_branch_protection %i: the first push of the default branch protects it as the setting says',
    async (level, isProtected, developersCanPush, fastForward, force) => {
      const { call, ctx, db } = sb();
      expect(
        (await call('PUT', '/application/settings', { body: { default_branch_protection: level } })).status,
      ).toBe(200);
      try {
        const created = await call('POST', '/projects', {
          token: users.owner.private_token,
          body: { name: `first-push-${level}`, visibility_level: 20 },
        });
        expect(created.status).toBe(201);
        for (const role of ['developer', 'master'] as const)
          db.data.members.push({
            project_id: created.body.id,
            user_id: users[role].id,
            access_level: role === 'master' ? MASTER : DEVELOPER,
            created_at: db.now(),
          });
        const project = db.data.projects.find((p) => p.id === created.body.id)!;
        const as = (role: Role, refspec: string) => git(local, ['push', url(role, 'http', project), refspec]);
        const shown = (run: Run) =>
          run.code === 0 ? 'allowed' : (/^remote: (GitLab: .*?)\s*$/m.exec(run.stderr)?.[1] ?? run.stderr);

        expect(shown(await as('developer', `${commits.base}:refs/heads/master`))).toBe('allowed');
        // The protection comes with the push's consequences, after its answer (8.x's GitPushService,
        // in the PostReceive background job).
        await pushWorkIdle(ctx);
        const branch = (await call('GET', `/projects/${project.id}/repository/branches/master`)).body;
        expect(branch).toMatchObject({
          protected: isProtected,
          developers_can_push: developersCanPush,
          developers_can_merge: false,
        });
        expect(shown(await as('master', `${commits.ahead}:refs/heads/master`))).toBe('allowed');
        expect(shown(await as('developer', `${commits.next}:refs/heads/master`))).toBe(fastForward);
        expect(shown(await as('developer', `+${commits.diverged}:refs/heads/master`))).toBe(force);
      } finally {
        await call('PUT', '/application/settings', { body: { default_branch_protection: 1 } });
      }
    },
  );

  it('a first file committed through the API into an empty project protects the default branch (the default setting, 1)', async () => {
    const { call, db } = sb();
    const created = await call('POST', '/projects', {
      token: users.owner.private_token,
      body: { name: 'first-file' },
    });
    db.data.members.push({
      project_id: created.body.id,
      user_id: users.developer.id,
      access_level: DEVELOPER,
      created_at: db.now(),
    });
    const unprotected = await call('GET', '/application/settings');
    expect(unprotected.body.default_branch_protection).toBe(1);
    const file = await call('POST', `/projects/${created.body.id}/repository/files`, {
      token: users.developer.private_token,
      body: { file_path: 'README.md', branch_name: 'master', content: 'first', commit_message: 'first' },
    });
    expect(file.status).toBe(201);
    expect((await call('GET', `/projects/${created.body.id}/repository/branches/master`)).body).toMatchObject(
      {
        protected: true,
        developers_can_push: true,
        developers_can_merge: false,
      },
    );
    // A project the sandbox made with its files was never pushed: nothing protected.
    expect(
      (await call('GET', `/projects/${publicProject.id}/repository/branches/master`)).body.protected,
    ).toBe(false);
  });

  it('the Tag Push Hook of an annotated tag: checkout_sha is the commit, after the tag object', async () => {
    const { call, ctx } = sb();
    const hook = await call('POST', `/projects/${publicProject.id}/hooks`, {
      body: { url: 'http://127.0.0.1:9/tag-hook', tag_push_events: true, push_events: false },
    });
    expect(hook.status).toBe(201);
    expect((await git(local, ['tag', '-a', 'annotated-1', '-m', 'Release 1', commits.base])).code).toBe(0);
    const tagObject = (await git(local, ['rev-parse', 'annotated-1'])).stdout.trim();
    expect(tagObject).not.toBe(commits.base);
    const pushed = await push('developer', 'http', 'refs/tags/annotated-1:refs/tags/annotated-1');
    expect(pushed.code).toBe(0);
    await ctx.hooks.idle();
    const delivery = ctx.hooks
      .recent()
      .find((d) => d.event === 'Tag Push Hook' && d.payload.ref === 'refs/tags/annotated-1');
    expect(delivery?.payload).toMatchObject({
      object_kind: 'tag_push',
      before: '0000000000000000000000000000000000000000',
      after: tagObject,
      checkout_sha: commits.base,
      commits: [expect.objectContaining({ id: commits.base })],
      total_commits_count: 1,
    });
  });

  it('the table in docs/sandbox.md is this one', async () => {
    const doc = await readFile(new URL('../../docs/sandbox.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('### Who may push what'));
    const lines = section.split('\n').filter((line) => line.startsWith('|'));
    const cell = (text: string) => text.trim().replace(/^`|`$/g, '');
    const [header, , ...body] = lines.map((line) => line.split('|').slice(1, -1).map(cell));
    expect(header).toEqual(['operation', ...ROLES]);
    const words: Record<string, string> = {
      allowed: 'allowed',
      'not found': 'not found',
      'no push': 'no push',
      [FORCE]: 'force',
      [DELETE]: 'delete',
      [PROTECTED]: 'protected',
      [TAGS]: 'tags',
    };
    expect(body.slice(0, ROWS.length)).toEqual(
      ROWS.map((row) => [row.operation, ...ROLES.map((role) => words[row.outcomes[role]])]),
    );
  });
});
