/**
 * The read-only status page (issue 7, Operations): `GET /status` (HTML, server-rendered, no script)
 * and `GET /status.json` (the same data); the merge queues' own page, `GET /status/queue` and
 * `GET /status/queue.json`. Mounted on the bot's port behind the ops app's guard (the
 * Host check and `server.status_auth`: ops-app.ts); `auth` here is for a router mounted alone.
 * Listening beyond loopback without `status_auth` is refused at start (receiver/exposure.ts).
 *
 * It never shows a secret: every string passes through the redactor with the known secret values
 * (status-data.ts), and no configuration value is read. Nothing here writes to the store.
 */
import { Router, type Response } from 'express';
import { basicAuth, type BasicAuthCredentials } from './basic-auth.ts';
import { renderStatusPage } from './render-page.ts';
import {
  collectFleet,
  collectQueuePage,
  collectStatus,
  type StatusData,
  type StatusSources,
} from './status-data.ts';
import { renderQueuePage } from './render-queue.ts';
import { STATUS_CSS_HASH } from './status-style.ts';

export { createDeliveryLog } from './delivery-log.ts';

export interface StatusRouterOptions extends StatusSources {
  /** Basic authentication; the page is open without it. */
  auth?: BasicAuthCredentials;
}

/** The page loads nothing and runs nothing: only its own inline stylesheet is allowed. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src '${STATUS_CSS_HASH}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function commonHeaders(res: Response): Response {
  // A status is stale at once, and may hold item titles: neither caches nor frames keep it.
  return res
    .set('cache-control', 'no-store')
    .set('x-content-type-options', 'nosniff')
    .set('referrer-policy', 'no-referrer')
    .set('x-frame-options', 'DENY');
}

export function createStatusRouter(options: StatusRouterOptions): Router {
  const router = Router();
  // Per route, not router.use(): the router is mounted at the root, and other paths are not its own.
  const guard = options.auth ? [basicAuth(options.auth)] : [];

  /** The store's view, and where several replicas share the state, the fleet's (redacted alike). */
  const collect = async (): Promise<StatusData> => {
    const fleet = await collectFleet(options);
    return collectStatus(options, fleet);
  };

  router.get('/status', ...guard, async (_req, res) => {
    const page = renderStatusPage(await collect());
    commonHeaders(res).set('content-security-policy', CONTENT_SECURITY_POLICY).type('html').send(page);
  });

  router.get('/status.json', ...guard, async (_req, res) => {
    commonHeaders(res).json(await collect());
  });

  // The merge queues' own view (docs/merge-queue.md#where-it-shows): linked from the top of /status.
  router.get('/status/queue', ...guard, (_req, res) => {
    const page = renderQueuePage(collectQueuePage(options));
    commonHeaders(res).set('content-security-policy', CONTENT_SECURITY_POLICY).type('html').send(page);
  });

  router.get('/status/queue.json', ...guard, (_req, res) => {
    commonHeaders(res).json(collectQueuePage(options));
  });

  return router;
}
