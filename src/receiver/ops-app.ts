/**
 * Everything on the bot's port but the hook route, on express: liveness and readiness (open to
 * probes), then the ops routes (explain here; metrics and the status page mounted by `extend`),
 * which pass `protect` first: the Host check and, when configured, basic authentication.
 */
import express, {
  type Express,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import {
  explainKind,
  type ExplainQuery,
  type ExplainResult,
  type ExplainSelector,
  itemNumber,
  projectRefProblem,
} from '../rules/index.ts';

export interface OpsAppOptions {
  /** Resolves true when the bot is ready (cached: see readiness.ts). */
  ready: () => Promise<boolean>;
  /**
   * Explain's answer for an item, for `GET /explain/:project/:kind/:number` (`?decision=ID`,
   * `?action=ID` or `?rule=NAME` show one kept decision: rules/item/explain-answer.ts).
   */
  explain?: (query: ExplainQuery, selector: ExplainSelector) => ExplainResult | Promise<ExplainResult>;
  /** Run before every route but /healthz and /readyz (Host check, authentication). */
  protect?: RequestHandler[];
  /** Extra routers (metrics, status page), mounted in order, behind `protect`. */
  extend?: (app: Express) => void;
}

export function createOpsApp(options: OpsAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  // What failed is in the log ("not ready"): the answer tells a prober only yes or no.
  app.get('/readyz', async (_req, res) => {
    const ready = await options.ready();
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not ready' });
  });

  for (const handler of options.protect ?? []) app.use(handler);

  // `:project` is a project id or `namespace%2Fproject`; `:number` the iid people see (#4) or the
  // global id (find-decision.ts says which wins). Text for a terminal, JSON when asked for.
  app.get('/explain/:project/:kind/:number', async (req, res) => {
    const project = String(req.params.project);
    const problem = projectRefProblem(project);
    if (problem) return void res.status(400).json({ message: problem });
    const kind = explainKind(String(req.params.kind));
    if (!kind) return void res.status(400).json({ message: 'kind must be issue or mr' });
    const number = itemNumber(String(req.params.number));
    if (number === undefined)
      return void res.status(400).json({ message: 'the number must be a positive integer, e.g. 4 or #4' });
    const selector = explainSelector(req.query);
    if (typeof selector === 'string') return void res.status(400).json({ message: selector });
    const answer = (await options.explain?.({ project, kind, number }, selector)) ?? {
      found: false,
      message: 'explain is not available',
    };
    res.set('cache-control', 'no-store').set('x-content-type-options', 'nosniff');
    if (!answer.found) return void res.status(404).json({ message: answer.message });
    if (req.accepts(['text', 'json']) === 'json') return void res.json(answer.body);
    const text = answer.body.explanation;
    res.type('text').send(answer.note ? `${answer.note}\n\n${text}\n` : `${text}\n`);
  });

  options.extend?.(app);

  app.use((_req, res) => {
    res.status(404).json({ message: 'not found' });
  });
  // The caller's mistakes are 400s, not 500s. Express decodes route parameters before the route
  // runs and throws a URIError for a malformed percent-encoding (`/explain/%E0%A4%A/issue/1`);
  // errors express and its parsers mark as the client's (an http-errors `status` 4xx with `expose`)
  // keep their status. Anything else is ours: 500, with nothing of the error in the answer.
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    res.set('cache-control', 'no-store').set('x-content-type-options', 'nosniff');
    if (error instanceof URIError)
      return void res.status(400).json({
        message:
          "the path is not valid percent-encoding: each '%' must be followed by two hex digits and the bytes must be UTF-8 (write '/' in a project path as %2F, '%' as %25)",
      });
    const status = clientErrorStatus(error);
    if (status !== undefined)
      return void res.status(status).json({ message: (error as { message: string }).message });
    res.status(500).json({ message: 'internal error' });
  });
  return app;
}

/**
 * `?decision=ID`, `?action=ID` or `?rule=NAME` (one at most, each a single bounded value), or what
 * is wrong with the query.
 */
function explainSelector(query: Request['query']): ExplainSelector | string {
  const given = (['decision', 'action', 'rule'] as const).filter((name) => query[name] !== undefined);
  if (given.length > 1) return `give one of decision, action and rule, not ${given.join(' and ')}`;
  const name = given[0];
  if (name === undefined) return {};
  const value = query[name];
  if (typeof value !== 'string' || value.length === 0 || value.length > 300)
    return `${name} must be given once, as 1 to 300 characters`;
  if (name === 'decision' && !/^[0-9a-f]{12}$/.test(value))
    return 'decision must be a decision id: 12 hex digits, as the status page and explain show them';
  return { [name]: value };
}

/** The 4xx status of an error express or a body parser made for the client to see (http-errors). */
function clientErrorStatus(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { status, expose, message } = error as { status?: unknown; expose?: unknown; message?: unknown };
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  return expose === true && typeof message === 'string' ? status : undefined;
}
