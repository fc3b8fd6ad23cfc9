/**
 * A user's access level to a project as the members API shows it (src/api/access.ts): the highest
 * of the project's own membership, its group's, and owner of a user namespace; blocked users and
 * what the API does not show count as none; other errors are thrown, never read as "no access".
 */
import { describe, expect, it } from 'vitest';
import { accessLevel } from '../../src/api/access.ts';
import { ApiError } from '../../src/api/errors.ts';

const notFound = () =>
  new ApiError({ method: 'GET', route: '/x', path: '/x', status: 404, kind: 'not_found' });

function client(project: Record<number, { access_level: number; state?: string }>, group: typeof project) {
  const calls: string[] = [];
  const read = (where: string, table: typeof project) => async (_id: unknown, user: number) => {
    calls.push(`${where}:${user}`);
    const member = table[user];
    if (!member) throw notFound();
    return { id: user, username: `u${user}`, name: `U${user}`, state: 'active', ...member };
  };
  return {
    calls,
    members: { get: read('project', project), getInGroup: read('group', group) } as never,
  };
}

const inGroup = { id: 3, namespace: { id: 9 } };
const inUserNamespace = { id: 3, namespace: { id: 9 }, owner: { id: 7 } };

describe('accessLevel', () => {
  it('is the highest of the project membership and the group membership', async () => {
    const c = client({ 1: { access_level: 20 } }, { 1: { access_level: 40 }, 2: { access_level: 30 } });
    expect(await accessLevel(c, inGroup, { id: 1 })).toBe(40);
    expect(await accessLevel(c, inGroup, { id: 2 })).toBe(30);
    expect(await accessLevel(c, inGroup, { id: 5 })).toBe(0);
  });

  it('stops at `enough`: a project member with that level needs no group read', async () => {
    const c = client({ 1: { access_level: 30 } }, { 1: { access_level: 50 } });
    expect(await accessLevel(c, inGroup, { id: 1 }, { enough: 30 })).toBe(30);
    expect(c.calls).toEqual(['project:1']);
  });

  it('gives the owner of a user namespace owner access; its group is not read', async () => {
    const c = client({ 8: { access_level: 30 } }, { 8: { access_level: 50 } });
    expect(await accessLevel(c, inUserNamespace, { id: 7 })).toBe(50);
    expect(await accessLevel(c, inUserNamespace, { id: 8 })).toBe(30);
    expect(c.calls).toEqual(['project:8']);
  });

  it('counts a user or a membership that is not active as no access', async () => {
    const c = client({ 1: { access_level: 40, state: 'blocked' } }, {});
    expect(await accessLevel(c, inGroup, { id: 1 })).toBe(0);
    expect(await accessLevel(c, inUserNamespace, { id: 7, state: 'blocked' })).toBe(0);
  });

  it('throws what is not a 404: a failing server never reads as "no access"', async () => {
    const failing = {
      members: {
        get: async () => {
          throw new ApiError({ method: 'GET', route: '/x', path: '/x', status: 502, kind: 'server' });
        },
        getInGroup: async () => {
          throw notFound();
        },
      } as never,
    };
    await expect(accessLevel(failing, inGroup, { id: 1 })).rejects.toMatchObject({ status: 502 });
  });
});
