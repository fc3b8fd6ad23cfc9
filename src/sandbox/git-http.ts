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
 * Who may fetch and push, and what a push goes through and becomes (the hooks, the push events),
 * are shared with git over SSH: git-access.ts.
 */
import { spawn } from 'node:child_process';
import type { Request, Response, Router } from 'express';
import type { SandboxContext } from './context.ts';
import type { UserRec } from './db.ts';
import { gitBinary } from './git/binary.ts';
import { decideGitAccess, type GitService, gitServiceRun, projectByPath } from './git-access.ts';

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
      await runBackend(
        req,
        res,
        { ...decision, user },
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
    access: Parameters<typeof gitServiceRun>[2],
    rest: string,
    query: string,
  ): Promise<void> {
    const run = gitServiceRun(ctx, options, access, [['http.receivepack', 'true']]);
    const env: Record<string, string> = {
      ...run.env,
      GIT_PROJECT_ROOT: options.reposDir,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: `/${access.project.id}.git${rest}`,
      QUERY_STRING: query,
      REQUEST_METHOD: req.method,
      CONTENT_TYPE: req.get('content-type') ?? '',
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
      REMOTE_USER: access.user?.username ?? '',
    };
    const encoding = req.get('content-encoding');
    if (encoding) env.HTTP_CONTENT_ENCODING = encoding;
    const protocol = req.get('git-protocol');
    if (protocol) env.GIT_PROTOCOL = protocol;
    if (req.get('content-length')) env.CONTENT_LENGTH = req.get('content-length')!;

    try {
      await new Promise<void>((resolve, reject) => {
        const child = spawn(gitBinary(), ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
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
    } finally {
      // The push's consequences land before the answer ends, as a file commit's do before its answer.
      await run.finish();
    }
    if (!res.writableEnded) res.end();
  }
}
