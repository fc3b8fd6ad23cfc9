/**
 * Whom the simulated CI acts as: a user of its own, as an external CI of the 8.x era had (a service
 * account with a token). Made at start when the sandbox runs the CI from the command line or `npm
 * start`: `sandbox-ci`, an administrator, so it may read and post statuses on every project as the
 * server's own CI could. Its private token (API) and personal access token (git over HTTP) are made
 * anew at each start and never printed: nobody else needs them.
 */
import { randomBytes } from 'node:crypto';
import type { SandboxContext } from '../context.ts';
import { addUser } from '../factories.ts';

export const CI_USERNAME = 'sandbox-ci';

/** The credentials the CI talks with: a private token for the API, a username and password for git. */
export interface CiCredentials {
  token: string;
  git: { username: string; password: string };
}

/**
 * Finds or makes the `sandbox-ci` administrator and gives it fresh tokens. A user of that name that
 * is not an administrator (someone made it) is never made one: the start fails with that reason.
 */
export function ciUser(ctx: SandboxContext): CiCredentials {
  const db = ctx.db;
  const existing = db.data.users.find((u) => u.username === CI_USERNAME);
  if (existing && !existing.is_admin)
    throw new Error(
      `a user named ${CI_USERNAME} exists and is not an administrator: the simulated CI acts as its own administrator ${CI_USERNAME} and will not make someone else's user one (rename that user, or start without the CI)`,
    );
  const user =
    existing ??
    addUser(db, {
      username: CI_USERNAME,
      name: 'Sandbox CI',
      is_admin: true,
      projects_limit: 0,
      can_create_group: false,
    });
  const token = randomBytes(20).toString('hex');
  const password = randomBytes(20).toString('hex');
  user.state = 'active';
  user.private_token = token;
  user.personal_access_tokens = [password];
  db.changed();
  return { token, git: { username: user.username, password } };
}
