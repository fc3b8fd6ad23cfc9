/** Another process holding a state store open, as a running bot does (hold-state-child.ts). */
import { spawn, type ChildProcess } from 'node:child_process';

/** Starts the child and resolves once the store is open; kill it with SIGTERM (clean) or SIGKILL (crash). */
export async function holdStateInChild(path: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/hold-state-child.ts', path], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('OPEN')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the state holder exited with ${code}`)));
  });
  return child;
}

export const exited = (child: ChildProcess): Promise<unknown> =>
  new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve),
  );
