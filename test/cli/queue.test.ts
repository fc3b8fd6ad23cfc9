/**
 * `hookbot queue` on a wrong command line (exit 2, nothing asked of any bot) and with no bot to
 * answer (exit 1, saying where it asked). What a running bot does with each control:
 * test/e2e/merge-queue-controls.test.ts.
 */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { runQueueCommand } from '../../src/cli/queue.ts';

async function run(action: string, args: string[], options: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runQueueCommand(action, args, options, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
  });
  return { code, out: out.join(''), err: err.join('') };
}

/** A port nobody listens on: taken, then closed. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('hookbot queue', () => {
  it.each([
    ['stop', [], {}, 'unknown action "stop": list, pause, resume, remove or front'],
    ['pause', ['acme/web'], { reason: 'x' }, 'pause takes PROJECT TARGET_BRANCH (got 1 argument)'],
    [
      'pause',
      ['acme/web', 'master'],
      {},
      'pause needs --reason TEXT (it is shown in explain and on the merge request)',
    ],
    [
      'remove',
      ['acme/web', '!7'],
      { reason: '  ' },
      'remove needs --reason TEXT (it is shown in explain and on the merge request)',
    ],
    ['front', ['acme/web', 'seven'], {}, 'the merge request is its number, e.g. !4 or 4 (got "seven")'],
    ['list', ['extra'], {}, 'list takes no argument (got 1 argument)'],
    [
      'list',
      [],
      { bot: 'localhost:3000' },
      `--bot takes the bot's URL, e.g. http://127.0.0.1:3000 (got "localhost:3000")`,
    ],
  ] as [string, string[], Record<string, string>, string][])(
    '%s %j %j: exit 2',
    async (action, args, options, message) => {
      expect(await run(action, args, options)).toEqual({
        code: 2,
        out: '',
        err: `hookbot queue: ${message}\n`,
      });
    },
  );

  it('says where it asked when no bot answers: exit 1', async () => {
    const port = await freePort();
    const answer = await run('resume', ['acme/web', 'master'], { bot: `http://127.0.0.1:${port}` });
    expect(answer.code).toBe(1);
    expect(answer.err).toMatch(
      new RegExp(`^hookbot queue: no bot answers at http://127.0.0.1:${port}/? \\(`),
    );
  });
});
