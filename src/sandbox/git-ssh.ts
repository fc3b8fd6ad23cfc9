/**
 * Git over SSH, as gitlab-shell serves it on real servers: one user, `git`, for everybody; the key
 * tells who is asking (matched against the keys users registered through `POST /user/keys` or
 * `POST /users/:id/keys`); the only commands are `git-upload-pack '<ns>/<p>.git'` (fetch, clone) and
 * `git-receive-pack '<ns>/<p>.git'` (push), quoted as git sends them, with or without a leading
 * slash. A shell or any other command is refused with gitlab-shell's `GitLab: Disallowed command`
 * on stderr and exit status 1.
 *
 * Who may fetch or push, the hooks a push goes through and what it becomes (push event, Push Hook,
 * merge request head, merge-when-build-succeeds cancelled) are git-http.ts's, through git-access.ts:
 * the transport changes, nothing else does.
 *
 * The host key is made at start (ed25519, in memory): a client trusts it through the known_hosts line
 * `knownHostsLine` answers.
 */
import { gitBinary } from './git/binary.ts';
import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import path from 'node:path';
import ssh2 from 'ssh2';
import type { AuthContext, ServerChannel } from 'ssh2';
import type { SandboxContext } from './context.ts';
import type { UserRec } from './db.ts';
import { afterPush, decideGitAccess, type GitService, gitServiceRun, projectByPath } from './git-access.ts';

const { Server, utils } = ssh2;

export interface GitSshOptions {
  host: string;
  /** 0: any free port. */
  port: number;
  /** The folder of the bare repositories (`<id>.git`). */
  reposDir: string;
  /** A folder of the sandbox's own where the push logs live. */
  workDir: string;
  /** The hooks every push goes through (installPushHooks of git-access.ts). */
  hooksDir: string;
}

export interface GitSshServer {
  port: number;
  /** The host's public key, `ssh-ed25519 AAAA…`. */
  hostKey: string;
  /** The known_hosts line a client needs to trust this server: `[127.0.0.1]:2222 ssh-ed25519 AAAA…`. */
  knownHostsLine: string;
  close(): Promise<void>;
}

/** `git-upload-pack '/group/project.git'` → the service and `group/project`; undefined for anything else. */
export function parseGitCommand(command: string): { service: GitService; path: string } | undefined {
  const match = /^(git-upload-pack|git-receive-pack) '\/?([^'/]+\/[^'/]+?)(?:\.git)?\/?'$/.exec(
    command.trim(),
  );
  if (!match) return undefined;
  return { service: match[1] as GitService, path: match[2]! };
}

/** The active or blocked user whose registered key is `key` (the key blob the client offered). */
function ownerOfKey(ctx: SandboxContext, key: Buffer): { user: UserRec; text: string } | undefined {
  for (const rec of ctx.db.data.keys) {
    const blob = rec.key.split(/\s+/)[1] ?? '';
    if (!Buffer.from(blob, 'base64').equals(key)) continue;
    const user = ctx.db.data.users.find((u) => u.id === rec.user_id);
    if (user) return { user, text: rec.key };
  }
  return undefined;
}

/**
 * Public key only, as user `git`, with a registered key: `query` when the client only asks whether the
 * key would do (it signs in the next round), the key's owner once its signature checks out.
 */
function authenticate(ctx: SandboxContext, auth: AuthContext): UserRec | 'query' | undefined {
  if (auth.username !== 'git' || auth.method !== 'publickey') return undefined;
  const owner = ownerOfKey(ctx, auth.key.data);
  if (!owner) return undefined;
  if (!auth.signature || !auth.blob) return 'query';
  const parsed = utils.parseKey(owner.text);
  if (parsed instanceof Error) return undefined;
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  return key?.verify(auth.blob, auth.signature, auth.hashAlgo) === true ? owner.user : undefined;
}

function refuse(channel: ServerChannel, message: string): void {
  channel.stderr.write(`GitLab: ${message}\n`);
  channel.exit(1);
  channel.end();
}

/**
 * A host key pair ssh2 can read back. Its ed25519 generator writes a private key its own parser
 * refuses about once in 200 ("Malformed OpenSSH private key", seen as a sandbox that failed to start):
 * such a key is made again.
 */
export function hostKeyPair(): { private: string; public: string } {
  for (let tries = 0; ; tries++) {
    const keys = utils.generateKeyPairSync('ed25519');
    if (!(utils.parseKey(keys.private) instanceof Error) || tries >= 20) return keys;
  }
}

export async function startGitSsh(ctx: SandboxContext, options: GitSshOptions): Promise<GitSshServer> {
  const keys = hostKeyPair();
  const hostKey = keys.public.split(/\s+/).slice(0, 2).join(' ');
  const children = new Set<ChildProcess>();

  const server = new Server({ hostKeys: [keys.private], ident: 'hookbot-sandbox' }, (client) => {
    // A client that goes away mid-handshake is no sandbox error.
    client.on('error', () => undefined);
    let user: UserRec | undefined;
    client.on('authentication', (auth) => {
      const who = authenticate(ctx, auth);
      if (!who) return auth.reject(['publickey']);
      // Only a verified signature names the user; a query names nobody.
      if (who !== 'query') user = who;
      auth.accept();
    });
    client.on('ready', () => {
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        const env: Record<string, string> = {};
        // git asks for protocol v2 through GIT_PROTOCOL (ssh -o SendEnv); other variables are ignored.
        session.on('env', (accept, reject, info) => {
          if (info.key === 'GIT_PROTOCOL' && /^[a-z0-9=:.]+$/i.test(info.val)) {
            env.GIT_PROTOCOL = info.val;
            accept?.();
          } else reject?.();
        });
        session.on('pty', (_accept, reject) => reject?.());
        session.on('shell', (accept) => refuse(accept(), 'Disallowed command'));
        session.on('exec', (accept, _reject, info) => {
          const channel = accept();
          serve(channel, user!, info.command, env).catch((error: unknown) => {
            console.error('sandbox: git over SSH failed', error);
            if (channel.writable) refuse(channel, 'Internal error');
          });
        });
      });
    });
  });

  async function serve(channel: ServerChannel, user: UserRec, command: string, env: Record<string, string>) {
    // The key is checked at sign-in; the account when a command runs, as gitlab-shell's /allowed does.
    if (user.state !== 'active' || user.ldap_blocked)
      return refuse(channel, 'Your account has been blocked.');
    const parsed = parseGitCommand(command);
    if (!parsed) return refuse(channel, 'Disallowed command');
    const project = projectByPath(ctx, parsed.path);
    const decision = decideGitAccess(ctx, project, user, parsed.service);
    if (!decision.allowed) return refuse(channel, decision.message);
    const run = gitServiceRun(ctx, options, { ...decision, user });
    const repo = path.join(options.reposDir, `${decision.project.id}.git`);
    const verb = parsed.service === 'git-upload-pack' ? 'upload-pack' : 'receive-pack';
    let code: number;
    try {
      code = await new Promise<number>((resolve, reject) => {
        const child = spawn(gitBinary(), [verb, repo], { env: { ...run.env, ...env }, stdio: 'pipe' });
        children.add(child);
        child.on('error', reject);
        child.on('close', (exit) => {
          children.delete(child);
          resolve(exit ?? 1);
        });
        child.stdin.on('error', () => undefined);
        channel.on('error', () => undefined);
        channel.pipe(child.stdin);
        child.stdout.pipe(channel, { end: false });
        child.stderr.pipe(channel.stderr, { end: false });
      });
    } finally {
      // The push's consequences after the command ended, as over HTTP (git-access.ts, afterPush).
      const receivedAt = performance.now();
      afterPush(ctx, decision.project.id, () => run.finish(receivedAt));
    }
    if (!channel.writable) return;
    channel.exit(code);
    channel.end();
  }

  // A plain TCP server hands each socket to ssh2, so close() can end every one, even a socket that
  // never finished its handshake (ssh2 only tells about a connection once the client said hello).
  const sockets = new Set<Socket>();
  const tcp = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    server.injectSocket(socket);
  });
  await new Promise<void>((resolve, reject) => {
    tcp.once('error', reject);
    tcp.listen(options.port, options.host, () => {
      tcp.off('error', reject);
      resolve();
    });
  });
  const address = tcp.address() as AddressInfo;
  return {
    port: address.port,
    hostKey,
    knownHostsLine: `[${address.address}]:${address.port} ${hostKey}`,
    async close() {
      const closed = new Promise<void>((resolve) => tcp.close(() => resolve()));
      const exits = [...children].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) resolve();
            else child.once('close', () => resolve());
          }),
      );
      for (const child of children) child.kill();
      for (const socket of sockets) socket.destroy();
      await Promise.all([closed, ...exits]);
    },
  };
}
