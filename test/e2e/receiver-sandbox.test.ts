/**
 * The full path over real HTTP: an issue created in the sandbox fires its project hook, the bot
 * verifies and persists the delivery, the pipeline re-reads the issue through the API and hands the
 * fresh state (labels included: payloads of that era carry none) to the processor.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
import { createClient } from '../../src/api/client.ts';
import { startBot, type Bot } from '../../src/start-bot.ts';
import { createSnapshotReader } from '../../src/rules/item/read-snapshot.ts';
import type { ItemSnapshot } from '../../src/rules/engine/snapshot.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';

const SECRET = 'e2e-hook-secret';

const quiet = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  debug: () => undefined,
};

describe('receiver against the sandbox', () => {
  let sb: Sandbox;
  let bot: Bot;
  let projectId = 0;
  const seen: ItemSnapshot[] = [];
  let arrived: () => void = () => undefined;

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'e2e-root-token', hookTimeoutMs: 2_000 });
    const botUser = addUser(sb.ctx.db, { username: 'hookbot', private_token: 'e2e-bot-token' });
    const group = addGroup(sb.ctx.db, {
      name: 'acme',
      owner_id: 1,
      members: [{ user_id: botUser.id, access_level: 40 }],
    });
    projectId = (
      await addProject(sb.ctx, {
        name: 'web',
        namespace_id: group.id,
        creator_id: 1,
        initialFiles: { 'README.md': '# web\n' },
      })
    ).id;
    const store = createMemoryStore();
    await store.open();
    bot = await startBot({
      api: { baseUrl: sb.url, token: 'e2e-bot-token' },
      webhook: { token: SECRET },
      server: { host: '127.0.0.1', port: 0, hookPath: '/hooks' },
      store,
      pipeline: { debounceMs: 0 },
      processor: ({ client }) => {
        const reader = createSnapshotReader(client);
        return async (item, triggers) => {
          const snapshot = await reader.read(item, triggers[0]!);
          if (snapshot) seen.push(snapshot);
          arrived();
        };
      },
      log: quiet,
    });
    const admin = createClient({ baseUrl: sb.url, token: 'e2e-root-token' });
    await admin.hooks.create(projectId, {
      url: bot.hookUrl,
      issues_events: true,
      merge_requests_events: true,
      note_events: true,
      token: SECRET,
    });
  });

  afterAll(async () => {
    await bot?.close();
    await sb?.close();
  });

  it('knows its own user from GET /user', () => {
    expect(bot.identity).toMatchObject({ username: 'hookbot' });
  });

  it('an issue opened in the sandbox reaches the processor with its labels read fresh', async () => {
    const admin = createClient({ baseUrl: sb.url, token: 'e2e-root-token' });
    const done = new Promise<void>((resolve) => (arrived = resolve));
    const issue = await admin.issues.create(projectId, { title: 'It crashes', labels: ['bug', 'ui'] });
    await done;
    expect(seen.at(-1)).toMatchObject({
      kind: 'issue',
      id: issue.id,
      project: { id: projectId, path_with_namespace: 'acme/web' },
      labels: ['bug', 'ui'],
      trigger: { kind: 'issue', action: 'open', byBot: false },
    });
  });

  it("marks the bot's own comments as caused by the bot", async () => {
    const admin = createClient({ baseUrl: sb.url, token: 'e2e-root-token' });
    const issue = await admin.issues.create(projectId, { title: 'Another' });
    await bot.client.notes.createIssueNote(projectId, issue.id, 'Thanks!');
    await waitFor(() =>
      seen.some((s) => s.id === issue.id && s.trigger.kind === 'note') ? true : undefined,
    );
    // The note's id, never its text: the processor reads the note from the server.
    expect(seen.find((s) => s.id === issue.id && s.trigger.kind === 'note')?.trigger).toMatchObject({
      kind: 'note',
      byBot: true,
      noteId: expect.any(Number),
    });
  });
});
