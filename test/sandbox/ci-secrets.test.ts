/**
 * A build of the simulated CI runs a repository's own script, written by whoever may push: it must not
 * reach a token of the sandbox's (its administrator's, its CI user's, any user's). The sandbox runs
 * here as `hookbot sandbox --data FILE --ci SCRIPT`, a real process, its administrator token in a file
 * (`--admin-token-file`: never on its command line), and the repository's build script does
 * what a hostile one would: reads the command line and the environment of every process it can see
 * (its parent's first), finds the data file's name there and reads it, lists the CI's folders, and
 * writes everything it got into a folder the test reads afterwards, looking for every token the
 * sandbox holds. Under root the build runs as `nobody` and gets nothing but command lines without a
 * token; as any other user it runs as that user, so only the command lines are asked to be clean
 * (docs/sandbox.md#what-a-build-can-reach says what it reaches then).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';

const ROOT = process.getuid?.() === 0;

/** The build script: everything it can read of the machine's processes and the sandbox's files goes to $1. */
const PROBE = String.raw`#!/bin/sh
out="$1"
id -u > "$out/uid"
env > "$out/own-environ"
try() { # try NAME COMMAND...: its output in $out/NAME, and "NAME ok" or "NAME refused" in $out/attempts
  name="$1"; shift
  if "$@" > "$out/$name" 2>/dev/null; then echo "$name ok" >> "$out/attempts"; else echo "$name refused" >> "$out/attempts"; fi
}
# the sandbox: the first ancestor whose command line says so (sh -c runs this script)
pid=$PPID
while [ "$pid" -gt 1 ] && ! tr '\000' ' ' < /proc/$pid/cmdline | grep -q 'hookbot.js sandbox'; do
  pid=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$pid/status)
done
tr '\000' ' ' < /proc/$pid/cmdline > "$out/parent-cmdline"
try parent-environ cat /proc/$pid/environ
for p in /proc/[0-9]*; do
  n=$(basename "$p")
  tr '\000' ' ' < "$p/cmdline" > "$out/cmdline-$n" 2>/dev/null
  cat "$p/environ" > "$out/environ-$n" 2>/dev/null || rm -f "$out/environ-$n"
done
data=$(tr '\000' '\n' < /proc/$pid/cmdline | sed -n '/^--data$/{n;p;}')
echo "$data" > "$out/data-path"
try token-file cat "$(tr '\000' '\n' < /proc/$pid/cmdline | sed -n '/^--admin-token-file$/{n;p;}')"
try data-file cat "$data"
try data-repos ls -la "$data.repos"
try data-folder ls -la "$(dirname "$data")"
work=$(dirname "$(dirname "$PWD")")
try ci-folder ls -la "$work"
try ci-caches ls -la "$work/caches"
for shm in /dev/shm/hookbot-sandbox-*; do try "shm-$(basename "$shm")" ls -la "$shm"; done
exit 0
`;

describe('a simulated CI build reaches no token of the sandbox', { timeout: 120_000 }, () => {
  let dir = '';
  let report = '';
  let child: ChildProcess | undefined;
  let out = '';
  const adminToken = `ci-secret-admin-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'hookbot-ci-secrets-'));
    report = await mkdtemp(path.join(tmpdir(), 'hookbot-ci-report-'));
    await chmod(report, 0o777); // the build (nobody, under root) writes its findings there
  });
  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    await rm(report, { recursive: true, force: true });
  });

  it("finds no token in any process's command line or environment, nor in the data file, and (as root) runs as nobody", async () => {
    const dataFile = path.join(dir, 'state.json');
    const tokenFile = path.join(dir, 'admin-token');
    await writeFile(tokenFile, `${adminToken}\n`, { mode: 0o600 });
    child = spawn(
      process.execPath,
      [
        'bin/hookbot.js',
        'sandbox',
        '--port',
        '0',
        '--data',
        dataFile,
        '--admin-token-file',
        tokenFile,
        '--ci',
        `sh probe.sh ${report}`,
        '--ci-duration',
        '0',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout!.on('data', (chunk) => (out += chunk));
    child.stderr!.on('data', (chunk) => (out += chunk));
    const apiUrl = await waitFor(
      () => (out.includes('Press Ctrl+C') ? /http:\/\/127\.0\.0\.1:\d+\/api\/v3/.exec(out)?.[0] : undefined),
      30_000,
      'the sandbox to serve',
    );
    const call = async (method: string, url: string, body?: unknown) => {
      const res = await fetch(`${apiUrl}${url}`, {
        method,
        headers: { 'private-token': adminToken, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return (await res.json()) as any;
    };
    const project = await call('POST', '/projects', { name: 'hostile' });
    await call('POST', `/projects/${project.id}/repository/files`, {
      file_path: 'probe.sh',
      branch_name: 'master',
      content: PROBE,
      commit_message: 'A build script that looks around',
    });
    const sha = (await call('GET', `/projects/${project.id}/repository/branches/master`)).commit.id;
    const result = await waitFor(
      async () => {
        const [latest] = (await call(
          'GET',
          `/projects/${project.id}/repository/commits/${sha}/statuses`,
        )) as {
          status: string;
          description: string;
        }[];
        return latest && latest.status !== 'pending' ? latest : undefined;
      },
      60_000,
      'the build to end',
    );
    expect(result, out).toMatchObject({ status: 'success' });

    // Every token the sandbox holds: its administrator's, and every user's (its CI user's among them).
    const data = await waitFor(
      async () => {
        const text = await readFile(dataFile, 'utf8').catch(() => '');
        return text.includes('sandbox-ci')
          ? (JSON.parse(text) as {
              users: { username: string; private_token: string; personal_access_tokens?: string[] }[];
            })
          : undefined;
      },
      10_000,
      'the data file to hold the CI user',
    );
    const needles = [
      adminToken,
      ...data.users.flatMap((u) => [u.private_token, ...(u.personal_access_tokens ?? [])]),
    ];
    expect(data.users.find((u) => u.username === 'sandbox-ci')?.personal_access_tokens).toHaveLength(1);

    const files = await readdir(report);
    const read = async (name: string) => readFile(path.join(report, name), 'utf8').catch(() => '');
    // The build looked: it read its parent's command line (the sandbox's) and many others.
    expect(await read('parent-cmdline')).toContain(
      `sandbox --port 0 --data ${dataFile} --admin-token-file ${tokenFile}`,
    );
    expect((await read('data-path')).trim()).toBe(dataFile);
    expect(files.filter((f) => f.startsWith('cmdline-')).length).toBeGreaterThan(3);
    // ...and found no token anywhere: not in a command line, not in an environment it could read.
    const leaks: string[] = [];
    for (const name of files) {
      const text = await read(name);
      for (const needle of needles)
        if (text.includes(needle)) leaks.push(`${name} holds ${needle.slice(0, 12)}...`);
    }
    expect(leaks).toEqual([]);

    if (ROOT) {
      const nobody = (await readFile('/etc/passwd', 'utf8')).split('\n').find((l) => l.startsWith('nobody:'));
      expect((await read('uid')).trim()).toBe(nobody?.split(':')[2] ?? '65534');
      const attempts = (await read('attempts')).trim().split('\n');
      for (const what of [
        'parent-environ',
        'token-file',
        'data-file',
        'data-repos',
        'data-folder',
        'ci-folder',
        'ci-caches',
      ])
        expect(attempts).toContain(`${what} refused`);
      expect(attempts.filter((a) => a.startsWith('shm-') && a.endsWith(' ok'))).toEqual([]);
      // The environment it got is the minimal one (docs/sandbox.md#simulated-ci).
      expect(await read('own-environ')).not.toMatch(/TOKEN|HOOKBOT/);
    }
    child.kill('SIGTERM');
  });
});
