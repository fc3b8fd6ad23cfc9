/**
 * Git over HTTP ("smart HTTP") at `/<namespace>/<project>.git`, the `http_url_to_repo` every project
 * answers: clone, fetch and push, served by running git's own service (`upload-pack`, `receive-pack`)
 * in its stateless mode over the project's bare repository, as `git http-backend` does (the same
 * repository the API reads and writes, see git.ts).
 *
 * Authentication is HTTP Basic, as on the real servers of the v3 era: a username with the account's
 * password or one of its personal access tokens may fetch and push; `oauth2` (any username, in fact)
 * with an OAuth access token may only fetch; the API's private token opens nothing here. Anything else
 * answers 401 with `WWW-Authenticate: Basic`. Public projects may be fetched without credentials.
 *
 * Who may fetch and push, and what a push goes through and becomes (the hooks, the push events),
 * are shared with git over SSH: git-access.ts.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createGunzip } from 'node:zlib';
import type { Request, Response, Router } from 'express';
import type { SandboxContext } from './context.ts';
import type { UserRec } from './db.ts';
import { gitBinary } from './git/binary.ts';
import { afterPush, decideGitAccess, type GitService, gitServiceRun, projectByPath } from './git-access.ts';

/** Who is asking, and what they may do. `undefined` user: anonymous. */
interface GitCaller {
  user: UserRec | undefined;
  readOnly: boolean;
}

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
  /** A folder of the sandbox's own where the push logs live. */
  workDir: string;
  /** The hooks every push goes through (installPushHooks of git-access.ts). */
  hooksDir: string;
}

/** Registers the smart HTTP routes on the sandbox's app (outside `/api/v3`, before the 404). */
export function registerGitHttp(app: Router, ctx: SandboxContext, options: GitHttpOptions): void {
  app.use(async (req: Request, res: Response, next) => {
    const [pathname = '', query = ''] = req.url.split('?', 2);
    const match = /^\/([^/]+)\/([^/]+?)\.git\/(info\/refs|git-upload-pack|git-receive-pack)$/.exec(pathname);
    if (!match) return next();
    const [, namespace = '', name = '', rest = ''] = match;
    const service: GitService | undefined =
      rest === 'info/refs'
        ? (/(?:^|&)service=(git-upload-pack|git-receive-pack)(?:&|$)/.exec(query)?.[1] as
            GitService | undefined)
        : (rest as GitService);
    try {
      // Only the smart protocol is served (the dumb one has no service and is refused, as on real servers).
      if (!service) return deny(res, 403, 'Dumb HTTP is not supported');
      const who = gitCaller(ctx, req);
      if (who === 'refused') return deny(res, 401, 'HTTP Basic: Access denied');
      const project = projectByPath(ctx, `${decodeURIComponent(namespace)}/${decodeURIComponent(name)}`);
      const user = who?.user;
      const decision = decideGitAccess(ctx, project, user, service, { readOnly: who?.readOnly ?? false });
      if (!decision.allowed) {
        if (decision.why === 'anonymous') return deny(res, 401, 'HTTP Basic: Access denied');
        return deny(res, decision.why === 'not-found' ? 404 : 403, decision.message);
      }
      await runBackend(req, res, { ...decision, user }, `/${rest}`, service);
    } catch (error) {
      next(error);
    }
  });

  /**
   * Runs the service itself, as `git http-backend` would run it for this request (http-backend.c:
   * `get_info_refs` and `service_rpc`), without http-backend in between: one process per request
   * instead of three (git, http-backend, the service), each a fork of the sandbox's large process.
   * `info/refs`: `# service=git-<name>` and a flush (not under protocol v2), then the service's
   * `--advertise-refs` output; the POST: the request body (gunzipped when the client sent it gzipped)
   * into `--stateless-rpc`, its output back.
   */
  async function runBackend(
    req: Request,
    res: Response,
    access: Parameters<typeof gitServiceRun>[2],
    rest: string,
    service: GitService,
  ): Promise<void> {
    const run = gitServiceRun(ctx, options, access, []);
    const name = service.slice('git-'.length);
    const advertise = rest === '/info/refs';
    if (!advertise && req.method !== 'POST')
      return void res.status(405).type('text/plain').send('Method Not Allowed\n');
    if (!advertise && req.get('content-type') !== `application/x-git-${name}-request`)
      return void res.status(415).type('text/plain').send('Unsupported Media Type\n');
    const env: Record<string, string> = {
      ...run.env,
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
      REMOTE_USER: access.user?.username ?? '',
    };
    const protocol = req.get('git-protocol');
    if (protocol) env.GIT_PROTOCOL = protocol;
    const repo = path.join(options.reposDir, `${access.project.id}.git`);
    const args = advertise
      ? [name, '--stateless-rpc', '--advertise-refs', repo]
      : [name, '--stateless-rpc', repo];
    res.setHeader('Expires', 'Fri, 01 Jan 1980 00:00:00 GMT');
    res.setHeader('Pragma', 'no-cache');
    res.setHeader('Cache-Control', 'no-cache, max-age=0, must-revalidate');
    res.setHeader('Content-Type', `application/x-git-${name}-${advertise ? 'advertisement' : 'result'}`);
    try {
      await new Promise<void>((resolve, reject) => {
        const child = spawn(gitBinary(), args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
        child.on('error', reject);
        child.stderr.on('data', () => undefined);
        if (advertise && !/version=2/.test(protocol ?? '')) {
          const line = `# service=${service}\n`;
          res.write(`${(line.length + 4).toString(16).padStart(4, '0')}${line}0000`);
        }
        child.stdout.pipe(res, { end: false });
        child.on('close', (code) => {
          if (code !== 0 && !res.headersSent) res.status(500);
          resolve();
        });
        child.stdin.on('error', () => undefined);
        if (advertise) child.stdin.end();
        else if (req.get('content-encoding') === 'gzip') {
          const gunzip = createGunzip();
          gunzip.on('error', () => child.stdin.destroy());
          req.pipe(gunzip).pipe(child.stdin);
        } else req.pipe(child.stdin);
      });
    } finally {
      // The push's consequences (events, hooks, merge requests refreshed) after the answer, in push
      // order per project, as 8.x's background job runs them (git-access.ts, afterPush).
      const receivedAt = performance.now();
      afterPush(ctx, access.project.id, () => run.finish(receivedAt));
    }
    if (!res.writableEnded) res.end();
  }
}
