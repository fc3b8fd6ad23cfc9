/**
 * The sandbox server: a local simulator of the v3 API (docs/api-v3.md), with real git repositories and
 * real hook deliveries. `startSandbox` is what the CLI, the demo and the end-to-end tests use.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { authenticate } from './auth.ts';
import { type SimulatedCi, type SimulatedCiOptions, startSimulatedCi } from './ci/simulated-ci.ts';
import type { HookDispatcher, SandboxContext } from './context.ts';
import { dataFile, prepareDataFolder, reposFolderOf } from './data-file.ts';
import { createDb, emptyData, type Db, type SandboxData, type UserRec } from './db.ts';
import { createGitRepos } from './git.ts';
import { installPushHooks, pushWorkIdle } from './git-access.ts';
import { ensureMergeRequestRefs } from './merge-request-refs.ts';
import { ensureMergeRequestVersions } from './merge-request-versions.ts';
import { registerGitHttp } from './git-http.ts';
import { type GitSshServer, startGitSsh } from './git-ssh.ts';
import { createHookDispatcher } from './hook-dispatcher.ts';
import { HttpError } from './http.ts';
import { routeFamilies } from './routes/index.ts';
import { makeTempFolder, removeOrphanedFolders } from './temp-root.ts';

export interface SandboxOptions {
  port?: number;
  host?: string;
  /** The administrator's (id 1, `root`) private token; random when not given. */
  adminToken?: string;
  /**
   * Persist the state here (JSON, 0600); repositories go to `<file>.repos/` (0700). In memory (and a
   * temp folder) otherwise. See data-file.ts.
   */
  dataFile?: string;
  seed?: 'demo' | 'empty';
  /** Hook delivery timeout; real servers wait 10 s. */
  hookTimeoutMs?: number;
  clock?: () => Date;
  /** Called with each line worth telling a person (the CLI prints them). */
  log?: (line: string) => void;
  /**
   * Serve git over SSH (git-ssh.ts) on this port of `host` (0: any free port); off when not given.
   * Then `ssh_url_to_repo` is `ssh://git@<host>:<port>/<ns>/<p>.git`.
   */
  sshPort?: number;
  /**
   * Run the simulated CI (ci/simulated-ci.ts) on every pushed commit, as its own user `sandbox-ci`;
   * off when not given. Its `log` is the sandbox's.
   */
  ci?: Omit<SimulatedCiOptions, 'log'>;
}

export interface Sandbox {
  /** e.g. `http://127.0.0.1:8929` */
  url: string;
  /** e.g. `http://127.0.0.1:8929/api/v3` */
  apiUrl: string;
  adminToken: string;
  ctx: SandboxContext;
  /** While git over SSH is served: its port, the host's public key and the known_hosts line to trust it. */
  ssh?: { port: number; hostKey: string; knownHostsLine: string };
  /** The simulated CI, while it runs (`ci` given). */
  ci?: SimulatedCi;
  close(): Promise<void>;
}

export function createSandboxApp(ctx: SandboxContext, beforeApi?: (app: express.Express) => void) {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const api = express.Router();
  // Real clients of that era send JSON `{}` on GET, form-encoded bodies and JSON bodies alike.
  api.use(express.json({ limit: '10mb', strict: false, type: ['application/json', 'application/*+json'] }));
  api.use(express.urlencoded({ extended: true, limit: '10mb' }));
  api.use((req, _res, next) => {
    // "a .json suffix on the path is not needed" (docs/api-v3.md#conventions): accept it all the same.
    const [pathname = '', query] = req.url.split('?', 2);
    if (pathname.endsWith('.json'))
      req.url = `${pathname.slice(0, -5)}${query === undefined ? '' : `?${query}`}`;
    next();
  });
  beforeApi?.(app);
  api.use(authenticate(ctx.db));
  for (const register of routeFamilies) register(api, ctx);
  app.use('/api/v3', api);
  app.use((_req: Request, res: Response) => {
    res.status(404).json({ error: '404 Not Found' });
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (error instanceof HttpError) {
      res.status(error.status).json(error.body);
      return;
    }
    const e = error as { type?: string; status?: number; message?: string };
    if (e.type === 'entity.parse.failed') {
      res.status(400).json({ message: '400 (Bad request) body is not valid JSON' });
      return;
    }
    if (e.type === 'entity.too.large') {
      res.status(413).json({ message: '413 Request Entity Too Large' });
      return;
    }
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
      res.status(e.status).json({ message: `${e.status} ${e.message ?? 'Bad request'}` });
      return;
    }
    console.error('sandbox: internal error', error);
    res.status(500).json({ message: '500 Internal Server Error' });
  });
  return app;
}

export function rootUser(db: Db, token: string): UserRec {
  const now = db.now();
  return {
    id: db.nextId('users'),
    username: 'root',
    name: 'Administrator',
    email: 'admin@example.com',
    password: randomBytes(12).toString('hex'),
    state: 'active',
    ldap_blocked: false,
    is_admin: true,
    private_token: token,
    oauth_tokens: [],
    bio: null,
    location: null,
    messenger: '',
    jobnetwork: '',
    microblog: '',
    website_url: '',
    extern_uid: null,
    provider: null,
    theme_id: 1,
    color_scheme_id: 1,
    projects_limit: 100000,
    can_create_group: true,
    can_create_project: true,
    external: false,
    two_factor_enabled: false,
    created_at: now,
    confirmed_at: now,
    current_sign_in_at: null,
    last_sign_in_at: null,
  };
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const adminToken = options.adminToken ?? randomBytes(10).toString('hex');
  // Warnings (who may read the data, a failed save) are never dropped: stderr when nobody listens.
  const warn = options.log ?? ((line: string) => console.warn(line));
  // What the simulated CI says (its builds): nowhere when nobody listens.
  const log = options.log ?? (() => undefined);
  const dataPath = options.dataFile ? path.resolve(options.dataFile) : undefined;
  const file = dataPath ? dataFile(dataPath) : undefined;
  let stored: SandboxData | null = null;
  if (dataPath && file) {
    await prepareDataFolder(dataPath, warn);
    stored = await file.read();
  }
  // What killed sandboxes left behind goes first (memory, on /dev/shm); not awaited by the start.
  void removeOrphanedFolders().catch(() => undefined);
  const tempRepos = dataPath ? undefined : await makeTempFolder('hookbot-sandbox-');
  const reposDir = tempRepos ?? reposFolderOf(dataPath!);

  const clock = options.clock ?? (() => new Date());
  const data = stored ?? emptyData(clock().toISOString());
  let writing: Promise<void> = Promise.resolve();
  let dirty = false;
  const db = createDb(data, {
    clock,
    onChange: () => {
      if (!file || dirty) return;
      dirty = true;
      // Coalesce the mutations of one request (and of a burst) into one write; writes never overlap.
      writing = writing.then(
        () =>
          new Promise<void>((resolve) =>
            setImmediate(() => {
              dirty = false;
              file.write(data).then(resolve, (error: unknown) => {
                warn(`sandbox: could not save ${options.dataFile}: ${String(error)}`);
                resolve();
              });
            }),
          ),
      );
    },
  });

  const root = data.users.find((u) => u.id === 1);
  if (!root) data.users.push(rootUser(db, adminToken));
  else if (options.adminToken) root.private_token = adminToken;

  let baseUrl = '';
  let sshBase: string | undefined;
  const ctx: SandboxContext = {
    db,
    git: createGitRepos(reposDir),
    hooks: afterPushes(createHookDispatcher(db, { timeoutMs: options.hookTimeoutMs ?? 10_000 }), () => ctx),
    on: { push: [], status: [] },
    baseUrl: () => baseUrl,
    sshBase: () => sshBase,
    reposDir,
  };
  if (!stored && options.seed === 'demo') {
    const { seedDemo } = await import('./seed.ts');
    await seedDemo(ctx);
  }
  await ensureMergeRequestRefs(ctx);
  await ensureMergeRequestVersions(ctx);
  db.changed();
  // Before listening: a refused CI (a user of its name that is not its own) stops the start cleanly.
  let ci: SimulatedCi | undefined;
  try {
    ci = options.ci ? startSimulatedCi(ctx, { ...options.ci, log }) : undefined;
  } catch (error) {
    await ctx.hooks.close();
    await writing;
    if (tempRepos) await rm(tempRepos, { recursive: true, force: true });
    throw error;
  }

  const gitWork = await makeTempFolder('hookbot-sandbox-git-');
  const hooksDir = await installPushHooks(gitWork);
  const gitDirs = { reposDir, workDir: gitWork, hooksDir };
  const app = createSandboxApp(ctx, (root) => registerGitHttp(root, ctx, gitDirs));
  // Not app.listen: express 5 calls its callback on failure too (with the error as argument), so a
  // taken port would look like a started server. The plain server rejects with Node's own error
  // (code EADDRINUSE, address, port), which the CLI turns into a message naming the port's setting.
  const server = createServer(app);
  let ssh: GitSshServer | undefined;
  await (async () => {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    if (options.sshPort !== undefined)
      ssh = await startGitSsh(ctx, { ...gitDirs, host: options.host ?? '127.0.0.1', port: options.sshPort });
  })().catch(async (error: unknown) => {
    await ci?.stop();
    if (server.listening) await new Promise((resolve) => server.close(resolve));
    await ctx.hooks.close();
    await writing;
    if (tempRepos) await rm(tempRepos, { recursive: true, force: true });
    await rm(gitWork, { recursive: true, force: true });
    throw error;
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  baseUrl = `http://${host}:${address.port}`;
  if (ssh) sshBase = `ssh://git@${host}:${ssh.port}`;

  return {
    url: baseUrl,
    apiUrl: `${baseUrl}/api/v3`,
    adminToken: data.users.find((u) => u.id === 1)!.private_token,
    ctx,
    ...(ssh ? { ssh: { port: ssh.port, hostKey: ssh.hostKey, knownHostsLine: ssh.knownHostsLine } } : {}),
    ...(ci ? { ci } : {}),
    async close() {
      // The CI first: it posts through the server, and its scripts must not outlive the sandbox.
      await ci?.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await ssh?.close();
      await pushWorkIdle(ctx);
      await ctx.hooks.close();
      ctx.git.close?.();
      await writing;
      if (tempRepos) await rm(tempRepos, { recursive: true, force: true });
      await rm(gitWork, { recursive: true, force: true });
    },
  };
}

/**
 * The dispatcher, whose `idle()` also waits for the consequences of pushes still to run (they emit
 * hooks of their own, after the push's answer: git-access.ts, afterPush).
 */
function afterPushes(hooks: HookDispatcher, ctx: () => SandboxContext): HookDispatcher {
  return {
    ...hooks,
    async idle() {
      await pushWorkIdle(ctx());
      await hooks.idle();
    },
  };
}
