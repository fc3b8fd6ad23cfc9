/**
 * Running the user's CI script in a build folder: `sh -c <script>` with the commit's files as its
 * working directory. Exit status 0 is success; anything else, a signal or the time limit is failure.
 *
 * The files come from whoever pushed the commit (any developer, any fork's merge request), so the
 * script gets a minimal environment, never the sandbox's own: `PATH`, `HOME` and `TMPDIR` (fresh
 * folders of the build), `LANG`, and the variables 8.x's CI gave a build (`CI`, `CI_BUILD_REF`,
 * `CI_BUILD_REF_NAME`, `CI_PROJECT_ID`, `CI_PROJECT_PATH`). No token of the CI's, the bot's or the
 * sandbox's reaches it: under a root sandbox it runs as `nobody` (build-user.ts), who can read none
 * of the sandbox's files or processes. It runs in a process group of its own, killed whole at the
 * time limit or when the CI stops. What it prints is kept (the last 4 KB) for the person who runs the
 * sandbox only.
 */
import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { BuildUser } from './build-user.ts';

const OUTPUT_TAIL = 4096;

export interface ScriptBuild {
  sha: string;
  branch: string;
  projectId: number;
  projectPath: string;
}

export interface ScriptResult {
  ok: boolean;
  /** Why it failed, in a few words (the status's description): `exit code 1`, `timed out after 600 s`. */
  reason: string;
  /** The last 4 KB of what it printed (stdout and stderr together). */
  output: string;
}

export async function runScript(
  script: string,
  files: string,
  build: ScriptBuild,
  options: { timeoutMs: number; signal: AbortSignal; as?: BuildUser },
): Promise<ScriptResult> {
  const scratch = path.join(path.dirname(files), 'home');
  const tmp = path.join(path.dirname(files), 'tmp');
  await mkdir(scratch, { recursive: true });
  await mkdir(tmp, { recursive: true });
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', script], {
      cwd: files,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Another user's process (its supplementary groups dropped): see build-user.ts.
      ...(options.as ? { uid: options.as.uid, gid: options.as.gid } : {}),
      env: {
        PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
        HOME: scratch,
        TMPDIR: tmp,
        LANG: 'C.UTF-8',
        CI: 'true',
        CI_BUILD_REF: build.sha,
        CI_BUILD_REF_NAME: build.branch,
        CI_PROJECT_ID: String(build.projectId),
        CI_PROJECT_PATH: build.projectPath,
      },
    });
    let output = Buffer.alloc(0);
    const keep = (chunk: Buffer) => {
      output = Buffer.concat([output, chunk]);
      if (output.length > OUTPUT_TAIL) output = output.subarray(output.length - OUTPUT_TAIL);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let killedFor: string | undefined;
    const kill = (why: string) => {
      killedFor ??= why;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const limit = options.timeoutMs / 1000;
    const timer = setTimeout(
      () => kill(`timed out after ${limit < 10 ? limit.toFixed(1) : Math.round(limit)} s`),
      options.timeoutMs,
    );
    const onAbort = () => kill('stopped with the sandbox');
    options.signal.addEventListener('abort', onAbort, { once: true });
    const finish = (ok: boolean, reason: string) => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      resolve({ ok, reason, output: output.toString('utf8') });
    };
    child.on('error', (error) => finish(false, `could not run sh: ${error.message}`));
    child.on('close', (code, signal) => {
      if (killedFor) finish(false, killedFor);
      else if (code === 0) finish(true, 'exit code 0');
      else finish(false, code === null ? `killed by ${signal ?? 'a signal'}` : `exit code ${code}`);
    });
  });
}
