import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { addIssueRecord } from '../../src/sandbox/factories.ts';
import { useSandbox } from '../helpers/sandbox.ts';

const sandbox = useSandbox();

describe('addIssueRecord', () => {
  it('writes an open issue the API then serves like one it created, numbering on from the project', async () => {
    const { sb } = sandbox();
    const admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    const project = await admin.projects.create({ name: 'records' });
    const first = await admin.issues.create(project.id, { title: 'Through the API' });
    const record = addIssueRecord(sb.ctx.db, { project_id: project.id, title: 'Written directly' });
    sb.ctx.db.changed();
    expect(record.iid).toBe(first.iid + 1);
    const served = await admin.issues.get(project.id, record.id);
    expect(served).toMatchObject({
      id: record.id,
      iid: record.iid,
      project_id: project.id,
      title: 'Written directly',
      state: 'opened',
      labels: [],
    });
    // The next issue through the API numbers on after it.
    expect((await admin.issues.create(project.id, { title: 'After' })).iid).toBe(record.iid + 1);
  });
});
