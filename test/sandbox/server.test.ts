import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.ts';
import { sandboxTempRoot } from '../../src/sandbox/temp-root.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { waitFor } from '../helpers/wait-for.ts';

describe('sandbox server core', () => {
  const ctx = useSandbox();

  it.each([
    ['no token', { token: null }],
    ['a wrong private token', { token: 'nope' }],
    ['a wrong bearer token', { token: null, headers: { authorization: 'Bearer nope' } }],
  ])('answers 401 with %s', async (_name, options) => {
    const res = await ctx().call('GET', '/projects', options);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: '401 Unauthorized' });
  });

  it('answers unknown routes with 404 {"error":"404 Not Found"}', async () => {
    const res = await ctx().call('GET', '/no/such/route');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: '404 Not Found' });
  });

  it('answers a malformed JSON body with 400 and a message', async () => {
    const res = await ctx().call('POST', '/projects', { raw: '{"name": ' });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/not valid JSON/);
  });

  it('refuses sudo by a non-admin and sudo to an unknown user', async () => {
    const { call, db } = ctx();
    const { addUser } = await import('../../src/sandbox/factories.ts');
    const user = addUser(db, { username: 'plain' });
    const asPlain = await call('GET', '/no/such', { token: user.private_token, headers: { sudo: 'root' } });
    expect(asPlain.status).toBe(403);
    expect(asPlain.body).toEqual({ message: '403 Forbidden: Must be admin to use sudo' });
    const unknown = await call('GET', '/no/such', { query: { sudo: 'ghost' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ message: '404 Not Found: No user id or username for: ghost' });
  });
});

describe('sandbox temp folders', () => {
  it('removes the folders a killed sandbox left behind, and only those', async () => {
    // A process that has ended: its pid names no process any more.
    const gone = Number(execFileSync('sh', ['-c', 'echo $$']).toString().trim());
    const orphan = await mkdtemp(path.join(sandboxTempRoot(), 'hookbot-sandbox-orphan-'));
    await writeFile(path.join(orphan, '.hookbot-owner'), String(gone));
    const mine = await mkdtemp(path.join(sandboxTempRoot(), 'hookbot-sandbox-alive-'));
    await writeFile(path.join(mine, '.hookbot-owner'), String(process.pid));
    const unmarked = await mkdtemp(path.join(sandboxTempRoot(), 'hookbot-sandbox-unmarked-'));
    const sb = await startSandbox();
    try {
      await waitFor(() => (existsSync(orphan) ? undefined : true), 20_000, 'the orphaned folder to go');
      expect(existsSync(mine)).toBe(true);
      expect(existsSync(unmarked)).toBe(true);
    } finally {
      await sb.close();
      await rm(mine, { recursive: true, force: true });
      await rm(unmarked, { recursive: true, force: true });
      await rm(orphan, { recursive: true, force: true });
    }
  });
});
