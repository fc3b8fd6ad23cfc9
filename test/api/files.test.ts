import { describe, expect, it } from 'vitest';
import { fileText } from '../../src/api/files.ts';
import { api, apiAs, testClient, useNock } from '../helpers/nock.ts';

const readme = {
  file_path: 'docs/README.md',
  branch_name: 'master',
  content: '# Hello\n',
  commit_message: 'Add the readme',
};
const answer = { file_path: 'docs/README.md', branch_name: 'master' };

describe('repository files client', () => {
  useNock();
  const client = testClient();

  it('reads one file at a ref: base64 content that fileText decodes, with its blob and commits', async () => {
    const file = {
      file_name: '.hookbot.yml',
      file_path: '.hookbot.yml',
      size: 10,
      encoding: 'base64',
      content: Buffer.from('rules: []\n').toString('base64'),
      ref: 'master',
      blob_id: 'b'.repeat(40),
      commit_id: 'c'.repeat(40),
      last_commit_id: 'd'.repeat(40),
    };
    api()
      .get('/projects/acme%2Fweb/repository/files')
      .query({ file_path: '.hookbot.yml', ref: 'master' })
      .reply(200, file);
    const read = await client.files.get('acme/web', '.hookbot.yml', 'master');
    expect(read).toMatchObject({ blob_id: file.blob_id, last_commit_id: file.last_commit_id });
    expect(fileText(read)).toBe('rules: []\n');
    expect(fileText({ encoding: 'text', content: 'plain' })).toBe('plain');
  });

  it('creates a file with POST (201) and answers file_path and branch_name', async () => {
    api().post('/projects/acme%2Fweb/repository/files', readme).reply(201, answer);
    expect(await client.files.create('acme/web', readme)).toEqual(answer);
  });

  it('sends base64 content with encoding=base64', async () => {
    const logo = {
      ...readme,
      file_path: 'logo.png',
      content: Buffer.from([0x89, 0x50]).toString('base64'),
      encoding: 'base64' as const,
    };
    api()
      .post('/projects/8/repository/files', logo)
      .reply(201, { ...answer, file_path: 'logo.png' });
    expect((await client.files.create(8, logo)).file_path).toBe('logo.png');
  });

  it('updates a file with PUT (200)', async () => {
    const edit = { ...readme, content: '# Hello again\n', commit_message: 'Reword' };
    api().put('/projects/8/repository/files', edit).reply(200, answer);
    expect(await client.files.update(8, edit)).toEqual(answer);
  });

  it('does not retry an update after a 502 (each update is a commit)', async () => {
    api().put('/projects/8/repository/files', readme).reply(502);
    await expect(client.files.update(8, readme)).rejects.toMatchObject({ status: 502, ambiguous: true });
  });

  it('maps a refused create (400) with the server words', async () => {
    api()
      .post('/projects/8/repository/files', readme)
      .reply(400, { message: 'A file with this name already exists' });
    await expect(client.files.create(8, readme)).rejects.toMatchObject({
      status: 400,
      kind: 'bad_request',
      serverMessage: 'A file with this name already exists',
    });
  });

  it('maps a missing parameter (400) with the server words', async () => {
    const { commit_message: _omitted, ...withoutMessage } = readme;
    api()
      .post('/projects/8/repository/files', withoutMessage)
      .reply(400, { message: '400 (Bad request) "commit_message" not given' });
    await expect(client.files.create(8, withoutMessage as typeof readme)).rejects.toMatchObject({
      kind: 'bad_request',
      serverMessage: '400 (Bad request) "commit_message" not given',
    });
  });

  it('acts as another user with sudo per call', async () => {
    apiAs('jane').post('/projects/8/repository/files', readme).reply(201, answer);
    expect(await client.files.create(8, readme, { sudo: 'jane' })).toEqual(answer);
  });
});
