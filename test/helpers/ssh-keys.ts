/**
 * SSH key pairs and known_hosts files for the tests of git over SSH, made with the system's
 * `ssh-keygen`; and the `GIT_SSH_COMMAND` that makes git use exactly them (no user or system config,
 * no agent, no prompt, strict host key checking).
 */
import { execFile } from 'node:child_process';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface KeyPair {
  /** The private key file, mode 0600 (ssh refuses a key others may read). */
  keyFile: string;
  /** `ssh-ed25519 AAAA… comment`, what `POST /user/keys` takes. */
  publicKey: string;
}

export async function sshKeyPair(dir: string, name: string): Promise<KeyPair> {
  const keyFile = path.join(dir, name);
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `${name}@test`, '-f', keyFile]);
  await chmod(keyFile, 0o600);
  return { keyFile, publicKey: (await readFile(`${keyFile}.pub`, 'utf8')).trim() };
}

export async function knownHostsFile(dir: string, name: string, line: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, `${line}\n`, { mode: 0o600 });
  return file;
}

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

export function gitSshCommand(keyFile: string, knownHosts: string): string {
  return [
    'ssh -F /dev/null',
    `-i ${quote(keyFile)}`,
    '-o IdentitiesOnly=yes -o IdentityAgent=none -o BatchMode=yes',
    `-o UserKnownHostsFile=${quote(knownHosts)} -o GlobalKnownHostsFile=/dev/null`,
    '-o StrictHostKeyChecking=yes',
  ].join(' ');
}
