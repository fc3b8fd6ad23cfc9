/**
 * Authentication as docs/api-v3.md#authentication states it: a private token (`PRIVATE-TOKEN` header or `private_token`
 * query/form field) or an OAuth token (`access_token` or `Authorization: Bearer`); 401 otherwise.
 * Sudo (header `SUDO` or parameter `sudo`) lets an administrator act as another user.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Db, UserRec } from './db.ts';
import { HttpError, params, unauthorized } from './http.ts';

export function tokenOf(req: Request): { kind: 'private' | 'oauth'; value: string } | undefined {
  const p = params(req);
  const header = req.get('private-token');
  if (header) return { kind: 'private', value: header };
  if (typeof p.private_token === 'string' && p.private_token)
    return { kind: 'private', value: p.private_token };
  const bearer = /^Bearer\s+(\S+)$/i.exec(req.get('authorization') ?? '');
  if (bearer?.[1]) return { kind: 'oauth', value: bearer[1] };
  if (typeof p.access_token === 'string' && p.access_token) return { kind: 'oauth', value: p.access_token };
  return undefined;
}

export function findUserByRef(db: Db, ref: string): UserRec | undefined {
  const users = db.data.users;
  return /^\d+$/.test(ref) ? users.find((u) => u.id === Number(ref)) : users.find((u) => u.username === ref);
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * The user a token belongs to, compared in constant time: both sides are hashed to equal length
 * (timingSafeEqual needs it, and comparing lengths would tell them), and every user's tokens are
 * compared, so the answer's timing says nothing about how much of a token matched, or whose.
 */
export function userOfToken(
  db: Db,
  token: { kind: 'private' | 'oauth'; value: string },
): UserRec | undefined {
  const given = digest(token.value);
  let found: UserRec | undefined;
  for (const user of db.data.users) {
    // A personal access token opens the API wherever the private token does (8.8 and later).
    const candidates =
      token.kind === 'private'
        ? [user.private_token, ...(user.personal_access_tokens ?? [])]
        : user.oauth_tokens;
    for (const candidate of candidates)
      if (timingSafeEqual(digest(candidate), given) && found === undefined) found = user;
  }
  return found;
}

export function authenticate(db: Db) {
  return (req: Request, res: Response, next: NextFunction) => {
    const token = tokenOf(req);
    const user = token === undefined ? undefined : userOfToken(db, token);
    // A blocked user's token no longer opens the API (real servers answer 401 for it too).
    if (!user || user.state === 'blocked') return next(unauthorized());

    const sudoParam = params(req).sudo;
    const sudo =
      req.get('sudo') ??
      (typeof sudoParam === 'string' || typeof sudoParam === 'number' ? String(sudoParam) : undefined);
    if (sudo === undefined || sudo === '') {
      res.locals.caller = { user };
      return next();
    }
    // docs/api-v3.md#authentication words these two; real servers say `403 Forbidden  - Must be admin to use sudo` and
    // `404 No user id or username for: <x> Not Found` (docs/server-behaviour.md#sudo). The contract wins.
    if (!user.is_admin)
      return next(new HttpError(403, { message: '403 Forbidden: Must be admin to use sudo' }));
    const target = findUserByRef(db, sudo);
    if (!target)
      return next(new HttpError(404, { message: `404 Not Found: No user id or username for: ${sudo}` }));
    res.locals.caller = { user: target, sudoBy: user };
    next();
  };
}
