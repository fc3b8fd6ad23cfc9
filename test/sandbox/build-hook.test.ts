/** Every commit status is a build of the sandbox's CI: each transition fires a Build Hook (8.x builds). */
import { describe, expect, it } from 'vitest';
import { addGroup, addProject } from '../../src/sandbox/factories.ts';
import { useSandbox } from '../helpers/sandbox.ts';

describe('Build Hook on status changes', () => {
  const ctx = useSandbox();

  it('fires for each transition of a status, with the build fields of that era', async () => {
    const { call, ctx: sandbox } = ctx();
    const group = addGroup(sandbox.db, { name: 'ci', owner_id: 1 });
    const project = await addProject(sandbox, {
      name: 'app',
      namespace_id: group.id,
      creator_id: 1,
      initialFiles: { 'a.txt': 'a\n' },
    });
    const sha = (await sandbox.git.branch(project.id, 'master'))!.id;
    // No listener on this URL: the delivery fails, but what was sent is kept in `recent()`.
    await call('POST', `/projects/${project.id}/hooks`, {
      body: { url: 'http://127.0.0.1:9/hooks', build_events: true, push_events: false },
    });
    await call('POST', `/projects/${project.id}/statuses/${sha}`, {
      body: { state: 'running', name: 'ci/test', ref: 'master' },
    });
    await call('POST', `/projects/${project.id}/statuses/${sha}`, {
      body: { state: 'success', name: 'ci/test', ref: 'master' },
    });
    await sandbox.hooks.idle();
    const builds = sandbox.hooks.recent().filter((d) => d.event === 'Build Hook');
    expect(builds.map((d) => d.payload.build_status)).toEqual(['running', 'success']);
    expect(builds[1]?.payload).toMatchObject({
      object_kind: 'build',
      ref: 'master',
      sha,
      build_name: 'ci/test',
      project_id: project.id,
    });
    expect(Object.keys(builds[1]!.payload).sort()).toEqual(
      [
        'object_kind',
        'ref',
        'tag',
        'before_sha',
        'sha',
        'build_id',
        'build_name',
        'build_stage',
        'build_status',
        'build_started_at',
        'build_finished_at',
        'build_duration',
        'build_allow_failure',
        'project_id',
        'project_name',
        'user',
        'commit',
        'repository',
      ].sort(),
    );
  });
});
