/**
 * Optional HTTP basic authentication for the status page. The comparison takes the same time
 * whatever the input: both sides are hashed to equal length first (timingSafeEqual needs equal
 * lengths, and comparing lengths would tell them), and both the name and the password are always
 * compared, so the answer's timing says nothing about which part was wrong or how much matched.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';

export interface BasicAuthCredentials {
  username: string;
  password: string;
}

export const REALM = 'hookbot';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

function sameText(given: string, expected: Buffer): boolean {
  return timingSafeEqual(digest(given), expected);
}

/** `Basic <base64 of user:password>`; the password may itself contain colons (RFC 7617). */
export function parseBasicAuth(header: string | undefined): BasicAuthCredentials | undefined {
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export function basicAuth(credentials: BasicAuthCredentials): RequestHandler {
  if (!credentials.username || !credentials.password)
    throw new Error('status page authentication needs both a username and a password');
  const username = digest(credentials.username);
  const password = digest(credentials.password);
  return (req, res, next) => {
    const given = parseBasicAuth(req.headers.authorization);
    const nameOk = sameText(given?.username ?? '', username);
    const passwordOk = sameText(given?.password ?? '', password);
    if (given && nameOk && passwordOk) return next();
    res
      .status(401)
      .set('www-authenticate', `Basic realm="${REALM}"`)
      .set('cache-control', 'no-store')
      .type('text/plain')
      .send('authentication required\n');
  };
}
