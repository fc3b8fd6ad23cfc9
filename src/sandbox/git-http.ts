/**
 * Git over HTTP ("smart HTTP") at `/<namespace>/<project>.git`, the `http_url_to_repo` every project
 * answers: clone, fetch and push, served by running `git http-backend` as a CGI program over the
 * project's bare repository (the same repository the API reads and writes, see git.ts).
 *
 * Authentication is HTTP Basic, as on the real servers of the v3 era: a username with the account's
 * password or one of its personal access tokens may fetch and push; `oauth2` (any username, in fact)
 * with an OAuth access token may only fetch; the API's private token opens nothing here. Anything else
 * answers 401 with `WWW-Authenticate: Basic`. Public projects may be fetched without credentials.
 *
 * A push goes through two hooks the sandbox installs for every repository (through `core.hooksPath`,
 * no file inside the repositories): `pre-receive` refuses what gitlab-shell refused (a push to a
 * protected branch by less than a master, a force push to or the deletion of a protected branch), and
 * `post-receive` writes the updated refs to a file the sandbox reads when `receive-pack` is done, then
 * tells `ctx.on.push` about each, exactly as a file commit through the API does: the Push Hook, the
 * project event, the refresh of the merge requests from or into the branch (with its `update` hook
 * and the cancellation of merge-when-build-succeeds on a pushed source branch).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Request, Response, Router } from 'express';
import type { SandboxContext } from './context.ts';
import { notify } from './context.ts';
import type { ProjectRec, UserRec } from './db.ts';
import { accessLevel, canRead, DEVELOPER, MASTER, pathWithNamespace, REPORTER } from './permissions.ts';

const PRE_RECEIVE = `#!/bin/sh
# The sandbox's pre-receive: gitlab-shell's refusals for protected branches.
zero=0000000000000000000000000000000000000000
status=0
while read -r old new ref; do
  branch=\${ref#refs/heads/}
  [ "$branch" = "$ref" ] && continue
  printf '%s\\n' "$SANDBOX_PROTECTED" | grep -qxF -- "$branch" || continue
  if [ "$SANDBOX_MAY_PUSH_PROTECTED" != 1 ]; then
    echo "GitLab: You are not allowed to push code to protected branches on this project."
    status=1
  elif [ "$new" = "$zero" ]; then
    echo "GitLab: You are not allowed to delete protected branches from this project."
    status=1
  elif [ "$old" != "$zero" ] && ! git merge-base --is-ancestor "$old" "$new"; then
    echo "GitLab: You are not allowed to force push code to a protected branch on this project."
    status=1
  fi
done
exit $status
`;

const POST_RECEIVE = `#!/bin/sh
# The sandbox's post-receive: the updated refs, for the sandbox to turn into push events.
cat >> "$SANDBOX_PUSH_LOG"
`;

/** Who is asking, and what they may do. `undefined` user: anonymous. */
interface GitCaller {
  user: UserRec | undefined;
  readOnly: boolean;
}

type Service = 'git-upload-pack' | 'git-receive-pack';

function basicCredentials(req: Request): { username: string; password: string } | undefined {
  const match = /^Basic\s+(\S+)$/i.exec(req.get('authorization') ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * The user the credentials name: password or personal access token of that username (read and
 * write), or an OAuth access token (read only). The private token is never accepted for git.
 */
function gitCaller(ctx: SandboxContext, req: Request): GitCaller | 'refused' | undefined {
  const credentials = basicCredentials(req);
  if (!credentials) return undefined;
  const { username, password } = credentials;
  if (password === '') return 'refused';
  const users = ctx.db.data.users;
  const named = users.find((u) => u.username === username || u.email === username);
  if (named && named.state === 'active') {
    if (named.password === password || (named.personal_access_tokens ?? []).includes(password))
      return { user: named, readOnly: false };
  }
  const oauth = users.find((u) => u.state === 'active' && u.oauth_tokens.includes(password));
  if (oauth) return { user: oauth, readOnly: true };
  return 'refused';
}

function deny(res: Response, status: 401 | 403 | 404, message: string): void {
  if (status === 401) res.set('WWW-Authenticate', 'Basic realm="GitLab"');
  res.status(status).type('text/plain').send(`${message}\n`);
}

export interface GitHttpOptions {
  /** The folder of the bare repositories (`<id>.git`). */
  reposDir: string;
  /** A folder of the sandbox's own where the hooks and push logs live. */
  workDir: string;
}

/** Registers the smart HTTP routes on the sandbox's app (outside `/api/v3`, before the 404). */
export function registerGitHttp(app: Router, ctx: SandboxContext, options: GitHttpOptions): void {
  const hooksDir = path.join(options.workDir, 'hooks');
  const installed = (async () => {
    await mkdir(hooksDir, { recursive: true });
    await writeFile(path.join(hooksDir, 'pre-receive'), PRE_RECEIVE, { mode: 0o755 });
    await writeFile(path.join(hooksDir, 'post-receive'), POST_RECEIVE, { mode: 0o755 });
  })();
  installed.catch(() => undefined); // reported by the first request that awaits it

  const findProject = (namespace: string, name: string): ProjectRec | undefined => {
    const full = `${namespace}/${name}`.toLowerCase();
    return ctx.db.data.projects.find((p) => pathWithNamespace(ctx.db, p).toLowerCase() === full);
  };

  app.use(async (req: Request, res: Response, next) => {
    const [pathname = '', query = ''] = req.url.split('?', 2);
    const match = /^\/([^/]+)\/([^/]+?)\.git\/(info\/refs|git-upload-pack|git-receive-pack)$/.exec(pathname);
    if (!match) return next();
    const [, namespace = '', name = '', rest = ''] = match;
    const service: Service | undefined =
      rest === 'info/refs'
        ? (/(?:^|&)service=(git-upload-pack|git-receive-pack)(?:&|$)/.exec(query)?.[1] as Service | undefined)
        : (rest as Service);
    try {
      await installed;
      // Only the smart protocol is served (the dumb one has no service and is refused, as on real servers).
      if (!service) return deny(res, 403, 'Dumb HTTP is not supported');
      const who = gitCaller(ctx, req);
      if (who === 'refused') return deny(res, 401, 'HTTP Basic: Access denied');
      const project = findProject(decodeURIComponent(namespace), decodeURIComponent(name));
      const user = who?.user;
      const visible =
        project !== undefined && (user ? canRead(ctx.db, project, user) : project.visibility_level === 20);
      if (!project || !visible)
        return user
          ? deny(res, 404, 'The project you were looking for could not be found.')
          : deny(res, 401, 'HTTP Basic: Access denied');
      const level = user ? accessLevel(ctx.db, project, user) : 0;
      if (service === 'git-upload-pack') {
        if (project.visibility_level === 0 && level < REPORTER)
          return deny(res, 403, 'You are not allowed to download code from this project.');
      } else {
        if (!user) return deny(res, 401, 'HTTP Basic: Access denied');
        if (who?.readOnly || level < DEVELOPER || project.archived)
          return deny(res, 403, 'You are not allowed to push code to this project.');
      }
      await runBackend(
        req,
        res,
        project,
        user,
        level,
        pathname.slice(`/${namespace}/${name}.git`.length),
        query,
      );
    } catch (error) {
      next(error);
    }
  });

  async function runBackend(
    req: Request,
    res: Response,
    project: ProjectRec,
    user: UserRec | undefined,
    level: number,
    rest: string,
    query: string,
  ): Promise<void> {
    const pushLog = path.join(options.workDir, `push-${randomBytes(8).toString('hex')}.log`);
    const protectedNames = ctx.db.data.protectedBranches
      .filter((b) => b.project_id === project.id)
      .map((b) => b.name);
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: options.workDir,
      LC_ALL: 'C',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_PROJECT_ROOT: options.reposDir,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: `/${project.id}.git${rest}`,
      QUERY_STRING: query,
      REQUEST_METHOD: req.method,
      CONTENT_TYPE: req.get('content-type') ?? '',
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
      REMOTE_USER: user?.username ?? '',
      GIT_CONFIG_COUNT: '4',
      GIT_CONFIG_KEY_0: 'http.receivepack',
      GIT_CONFIG_VALUE_0: 'true',
      GIT_CONFIG_KEY_1: 'core.hooksPath',
      GIT_CONFIG_VALUE_1: hooksDir,
      GIT_CONFIG_KEY_2: 'gc.auto',
      GIT_CONFIG_VALUE_2: '0',
      GIT_CONFIG_KEY_3: 'receive.advertisePushOptions',
      GIT_CONFIG_VALUE_3: 'false',
      SANDBOX_PROTECTED: protectedNames.join('\n'),
      SANDBOX_MAY_PUSH_PROTECTED: level >= MASTER ? '1' : '0',
      SANDBOX_PUSH_LOG: pushLog,
      GIT_COMMITTER_NAME: user?.name ?? 'Sandbox',
      GIT_COMMITTER_EMAIL: user?.email ?? 'sandbox@localhost',
    };
    const encoding = req.get('content-encoding');
    if (encoding) env.HTTP_CONTENT_ENCODING = encoding;
    const protocol = req.get('git-protocol');
    if (protocol) env.GIT_PROTOCOL = protocol;
    if (req.get('content-length')) env.CONTENT_LENGTH = req.get('content-length')!;

    try {
      await new Promise<void>((resolve, reject) => {
        const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
        let head = Buffer.alloc(0);
        let headersDone = false;
        child.on('error', reject);
        child.stderr.on('data', () => undefined);
        child.stdout.on('data', (chunk: Buffer) => {
          if (headersDone) {
            res.write(chunk);
            return;
          }
          head = Buffer.concat([head, chunk]);
          const crlf = head.indexOf('\r\n\r\n');
          const lf = head.indexOf('\n\n');
          const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf + 4 : lf >= 0 ? lf + 2 : -1;
          if (end < 0) return;
          headersDone = true;
          for (const line of head.subarray(0, end).toString('latin1').split(/\r?\n/)) {
            const colon = line.indexOf(':');
            if (colon <= 0) continue;
            const key = line.slice(0, colon).trim();
            const value = line.slice(colon + 1).trim();
            if (key.toLowerCase() === 'status') res.status(Number(value.split(' ')[0]) || 200);
            else res.setHeader(key, value);
          }
          res.write(head.subarray(end));
        });
        child.on('close', (code) => {
          if (!headersDone && !res.headersSent)
            res.status(500).type('text/plain').send(`git http-backend failed (${code})\n`);
          resolve();
        });
        child.stdin.on('error', () => undefined);
        req.pipe(child.stdin);
      });
      // The push's consequences land before the answer ends, as a file commit's do before its answer.
      await announcePushes(project, user, pushLog);
      if (!res.writableEnded) res.end();
    } finally {
      await rm(pushLog, { force: true });
    }
  }

  /** Every ref `receive-pack` updated becomes the push event a file commit would have made. */
  async function announcePushes(project: ProjectRec, user: UserRec | undefined, pushLog: string) {
    let lines: string;
    try {
      lines = await readFile(pushLog, 'utf8');
    } catch {
      return; // nothing was pushed (a fetch, or a refused push)
    }
    if (!user) return;
    for (const line of lines.split('\n')) {
      const [before, after, ref] = line.trim().split(' ');
      if (!before || !after || !ref) continue;
      await notify(ctx.on.push, { project, ref, before, after, user });
    }
  }
}
