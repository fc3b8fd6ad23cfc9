/**
 * The `Host` check of the ops routes (status page, metrics, explain). A page in a browser can be
 * made to reach a bot on the same machine or network through a name the attacker controls and
 * points at the bot's address (DNS rebinding): the browser then sends that name as `Host`. So these
 * routes answer only to names that cannot be such a name: loopback names (`localhost`,
 * `*.localhost`), IP address literals (a browser sends the address it was given, no name to
 * rebind), and the names the operator lists in `server.allowed_hosts`.
 */
import { isIP } from 'node:net';
import type { RequestHandler } from 'express';

/** The host name of a `Host` header, without the port, lower case; IPv6 without brackets. */
export function hostName(header: string): string {
  const text = header.trim().toLowerCase();
  if (text.startsWith('[')) return text.slice(1, text.indexOf(']') < 0 ? undefined : text.indexOf(']'));
  const colon = text.lastIndexOf(':');
  return (colon < 0 ? text : text.slice(0, colon)).replace(/\.$/, '');
}

/**
 * `allowed`: names from the configuration; `example.com` allows that name, `.example.com` its
 * subdomains too.
 */
export function isAllowedHost(header: string | undefined, allowed: readonly string[]): boolean {
  // Browsers always send Host; a client that sends none (HTTP/1.0 tools) is not one.
  if (header === undefined) return true;
  const name = hostName(header);
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (isIP(name) !== 0) return true;
  return allowed.some((entry) => {
    const wanted = entry.trim().toLowerCase().replace(/\.$/, '');
    return wanted.startsWith('.') ? name === wanted.slice(1) || name.endsWith(wanted) : name === wanted;
  });
}

export function hostCheck(allowed: readonly string[]): RequestHandler {
  return (req, res, next) => {
    if (isAllowedHost(req.headers.host, allowed)) return next();
    res
      .status(403)
      .set('cache-control', 'no-store')
      .json({
        message: `host "${hostName(req.headers.host ?? '').slice(0, 100)}" is not allowed: the status page, metrics and explain answer to localhost, IP addresses and the names in server.allowed_hosts`,
      });
  };
}
