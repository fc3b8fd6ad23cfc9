/**
 * Everything on the bot's port but the hook route: liveness, readiness and explain, on express.
 * Later parts (metrics, the status page) mount here too.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';

export interface ReadinessCheck {
  name: string;
  check: () => Promise<void>;
}

export interface OpsAppOptions {
  /** Each must resolve for `/readyz` to answer 200 (the state store is open, the API answers...). */
  readiness: ReadinessCheck[];
  /** The latest decision for an item, for `GET /explain/:project/:kind/:id`; undefined when none. */
  explain?: (project: string, kind: 'issue' | 'merge_request', id: number) => Promise<unknown> | unknown;
  /** Extra routers (metrics, status page), mounted in order. */
  extend?: (app: Express) => void;
}

export function createOpsApp(options: OpsAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.get('/readyz', async (_req, res) => {
    const results = await Promise.all(
      options.readiness.map(async ({ name, check }) => {
        try {
          await withTimeout(check(), 5_000);
          return { name, ok: true };
        } catch (error) {
          return { name, ok: false, message: error instanceof Error ? error.message : String(error) };
        }
      }),
    );
    const ready = results.every((r) => r.ok);
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not ready', checks: results });
  });

  // `:project` is a numeric id or `namespace%2Fproject`; kind `issue` or `mr` (or `merge_request`).
  app.get('/explain/:project/:kind/:id', async (req, res) => {
    const kind =
      req.params.kind === 'mr' || req.params.kind === 'merge_request'
        ? 'merge_request'
        : req.params.kind === 'issue'
          ? 'issue'
          : undefined;
    const id = Number(req.params.id);
    if (!kind) return void res.status(400).json({ message: 'kind must be issue or mr' });
    if (!Number.isInteger(id) || id <= 0)
      return void res.status(400).json({ message: 'id must be a positive integer' });
    let decision: unknown;
    try {
      decision = await options.explain?.(String(req.params.project), kind, id);
    } catch {
      return void res.status(404).json({ message: 'no such project' });
    }
    if (decision === undefined)
      return void res.status(404).json({ message: 'no decision recorded for this item yet' });
    res.json(decision);
  });

  options.extend?.(app);

  app.use((_req, res) => {
    res.status(404).json({ message: 'not found' });
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    res.status(500).json({ message: 'internal error' });
    void error;
  });
  return app;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
