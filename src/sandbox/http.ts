/**
 * Request and answer helpers shared by every sandbox route: errors in the server's own formats,
 * parameter reading (query and body merged, as grape does), flags, pagination headers.
 */
import type { NextFunction, Request, Response } from 'express';
import type { Caller } from './context.ts';

/** Thrown by a handler; the error middleware turns it into the JSON answer. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(typeof body.message === 'string' ? body.message : `HTTP ${status}`);
  }
}

export const badRequest = (message: string | Record<string, string[]>) => new HttpError(400, { message });
/** docs/api-v3.md#errors rule 1: `400 (Bad request) "title" not given`. */
export const missing = (name: string) =>
  new HttpError(400, { message: `400 (Bad request) "${name}" not given` });
export const unauthorized = () => new HttpError(401, { message: '401 Unauthorized' });
export const forbidden = () => new HttpError(403, { message: '403 Forbidden' });
/** `what` as real servers word it: `404 Project Not Found`, `404 Not found`, ... */
export const notFound = (what = 'Not') =>
  new HttpError(404, { message: what === 'Not' ? '404 Not found' : `404 ${what} Not Found` });
export const notAllowed = () => new HttpError(405, { message: '405 Method Not Allowed' });
export const conflict = (message: string) => new HttpError(409, { message });

/** Query and body parameters merged (body wins), as the real servers' framework reads them. */
export function params(req: Request): Record<string, unknown> {
  const body = req.body !== null && typeof req.body === 'object' && !Array.isArray(req.body) ? req.body : {};
  return { ...(req.query as Record<string, unknown>), ...(body as Record<string, unknown>) };
}

export function str(p: Record<string, unknown>, name: string): string | undefined {
  const value = p[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw badRequest(`${name} is invalid`);
}

export function requiredStr(p: Record<string, unknown>, name: string): string {
  const value = str(p, name);
  if (value === undefined || value === '') throw missing(name);
  return value;
}

export function int(p: Record<string, unknown>, name: string): number | undefined {
  const value = p[name];
  if (value === undefined || value === null || value === '') return undefined;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n)) throw badRequest(`${name} is invalid`);
  return n;
}

export function requiredInt(p: Record<string, unknown>, name: string): number {
  const value = int(p, name);
  if (value === undefined) throw missing(name);
  return value;
}

/** Flags arrive as JSON booleans or as `true`/`false`/`1`/`0` strings from forms and queries. */
export function flag(p: Record<string, unknown>, name: string): boolean | undefined {
  const value = p[name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'boolean') return value;
  const text = String(value).toLowerCase();
  if (['true', '1', 'yes', 'on', 't'].includes(text)) return true;
  if (['false', '0', 'no', 'off', 'f'].includes(text)) return false;
  throw badRequest(`${name} is invalid`);
}

/** A comma-separated list (`labels=a,b`) or a JSON array. */
export function list(p: Record<string, unknown>, name: string): string[] | undefined {
  const value = p[name];
  if (value === undefined || value === null) return undefined;
  const parts = Array.isArray(value) ? value.map(String) : String(value).split(',');
  return parts.map((s) => s.trim()).filter((s) => s.length > 0);
}

export function caller(res: Response): Caller {
  const c = res.locals.caller as Caller | undefined;
  if (!c) throw unauthorized();
  return c;
}

/**
 * Answers one page of `items` with the headers docs/api-v3.md#pagination lists: `Link` (prev, next, first, last),
 * `X-Total`, `X-Total-Pages`, `X-Per-Page`, `X-Page`, `X-Next-Page`, `X-Prev-Page` (empty when none,
 * as real servers send). Default 20 per page, maximum 100.
 */
export function sendPage<T>(req: Request, res: Response, items: readonly T[], status = 200): void {
  const p = params(req);
  const perPage = Math.min(100, Math.max(1, int(p, 'per_page') ?? 20));
  const totalPages = Math.max(1, Math.ceil(items.length / perPage));
  const page = Math.max(1, int(p, 'page') ?? 1);
  const url = new URL(req.originalUrl, `${req.protocol}://${req.get('host') ?? 'localhost'}`);
  for (const key of ['private_token', 'access_token']) url.searchParams.delete(key); // never echo a token
  const link = (n: number) => {
    url.searchParams.set('page', String(n));
    url.searchParams.set('per_page', String(perPage));
    return url.toString();
  };
  const links: string[] = [];
  if (page > 1) links.push(`<${link(page - 1)}>; rel="prev"`);
  if (page < totalPages) links.push(`<${link(page + 1)}>; rel="next"`);
  links.push(`<${link(1)}>; rel="first"`);
  links.push(`<${link(totalPages)}>; rel="last"`);
  res.set({
    Link: links.join(', '),
    'X-Total': String(items.length),
    'X-Total-Pages': String(totalPages),
    'X-Per-Page': String(perPage),
    'X-Page': String(page),
    'X-Next-Page': page < totalPages ? String(page + 1) : '',
    'X-Prev-Page': page > 1 ? String(page - 1) : '',
  });
  res.status(status).json(items.slice((page - 1) * perPage, page * perPage));
}

/** Wraps an async handler so a thrown HttpError (or bug) reaches the error middleware. */
export function handle(fn: (req: Request, res: Response) => Promise<unknown> | unknown) {
  return (req: Request, res: Response, next: NextFunction) => {
    Promise.resolve()
      .then(() => fn(req, res))
      .catch(next);
  };
}
