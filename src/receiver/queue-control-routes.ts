/**
 * The merge queues' controls on the ops port (docs/operations.md#queue-controls), behind the ops
 * app's guard (the Host check and `server.status_auth`):
 *
 *   GET  /queues               every queue, its entries in order, its pause
 *   POST /queues/pause         { project, target_branch, queue?, reason, by? }
 *   POST /queues/resume        { project, target_branch, queue?, by? }
 *   POST /queues/remove        { project, iid, reason, by? }
 *   POST /queues/front         { project, iid, by? }
 *
 * Writes take JSON only (`Content-Type: application/json`): a browser's form can send only other
 * types without a preflight, and the ops routes answer no preflight, so no page can forge them. Where
 * the ops routes are open to the network without `status_auth` (`server.public_ops`), writes are
 * refused: a freeze or a removal needs credentials there. Errors are JSON `{ message }`.
 */
import express, { Router, type Request, type Response } from 'express';
import { z } from 'zod';

/** What the routes need of the controls (scheduler/sweeps/queue-controls.ts implements it). */
export interface QueueControlsPort {
  list(): unknown[];
  pause(address: QueueName, by: string, reason: string): Promise<ControlOutcome>;
  resume(address: QueueName, by: string): Promise<ControlOutcome>;
  remove(address: MergeRequestName, by: string, reason: string): Promise<ControlOutcome>;
  front(address: MergeRequestName, by: string): Promise<ControlOutcome>;
}

interface QueueName {
  project: string;
  targetBranch: string;
  queue?: string;
}

interface MergeRequestName {
  project: string;
  iid: number;
}

type ControlOutcome = { ok: true; message: string } | { ok: false; status: number; message: string };

export interface QueueControlRoutesOptions {
  controls: QueueControlsPort;
  /**
   * Writes are allowed: `server.status_auth` guards the port, or the bot listens on loopback only.
   * Otherwise (`server.public_ops` without credentials) each write answers 403.
   */
  writable: boolean;
  /** Who acts when the body names nobody (the status_auth username, else `operator`). */
  defaultBy: string;
}

const text = (what: string, max: number) =>
  z
    .string({ error: `${what} must be a string` })
    .trim()
    .min(1, { error: `${what} must not be empty` })
    .max(max, { error: `${what} is at most ${max} characters` })
    .refine((value) => !/[\r\n]/.test(value), { error: `${what} is one line` });

const project = text('project (namespace/project)', 255);
const by = text('by', 100).optional();
const queueFields = {
  project,
  target_branch: text('target_branch', 255),
  queue: z
    .string({ error: 'queue must be a string' })
    .regex(/^[\w.-]+$/, { error: 'a queue name is letters, digits, ".", "_" and "-"' })
    .optional(),
  by,
};
const mrFields = {
  project,
  iid: z
    .number({ error: 'iid must be the number people see, e.g. 4' })
    .int({ error: 'iid must be a whole number' })
    .positive({ error: 'iid must be positive' }),
  by,
};
const schemas = {
  pause: z.strictObject({ ...queueFields, reason: text('reason', 500) }),
  resume: z.strictObject(queueFields),
  remove: z.strictObject({ ...mrFields, reason: text('reason', 500) }),
  front: z.strictObject(mrFields),
};

function answer(res: Response, status: number, body: object): void {
  res.set('cache-control', 'no-store').set('x-content-type-options', 'nosniff').status(status).json(body);
}

export function createQueueControlRoutes(options: QueueControlRoutesOptions): Router {
  const router = Router();
  const json = express.json({ limit: '16kb', strict: true });

  router.get('/queues', (_req, res) => answer(res, 200, { queues: options.controls.list() }));

  /** The checks every write passes before its body is read. */
  const gate = (req: Request, res: Response, next: () => void) => {
    if (!options.writable)
      return answer(res, 403, {
        message:
          'queue controls need server.status_auth where the ops routes are open beyond loopback (server.public_ops): set status_auth to use them',
      });
    if (!req.is('application/json'))
      return answer(res, 415, {
        message: 'send the body as JSON, with Content-Type: application/json',
      });
    next();
  };

  for (const name of ['pause', 'resume', 'remove', 'front'] as const)
    router.post(`/queues/${name}`, gate, json, async (req, res) => {
      const parsed = schemas[name].safeParse(req.body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const field = issue?.path.join('.');
        const message =
          issue?.code === 'unrecognized_keys'
            ? `unknown field: ${issue.keys.join(', ')}`
            : issue?.code === 'invalid_type' && issue.input === undefined
              ? `${field} is missing`
              : (issue?.message ?? 'the body is not a valid request');
        return answer(res, 400, { message });
      }
      const body = parsed.data;
      const who = body.by ?? options.defaultBy;
      const outcome = await run(name, body, who);
      answer(res, outcome.ok ? 200 : outcome.status, { message: outcome.message });
    });

  function run(
    name: keyof typeof schemas,
    body: z.output<(typeof schemas)[keyof typeof schemas]>,
    who: string,
  ): Promise<ControlOutcome> {
    const { controls } = options;
    if ('iid' in body) {
      const mr = { project: body.project, iid: body.iid };
      return name === 'remove' && 'reason' in body
        ? controls.remove(mr, who, body.reason)
        : controls.front(mr, who);
    }
    const queue = {
      project: body.project,
      targetBranch: body.target_branch,
      ...(body.queue !== undefined ? { queue: body.queue } : {}),
    };
    return name === 'pause' && 'reason' in body
      ? controls.pause(queue, who, body.reason)
      : controls.resume(queue, who);
  }

  return router;
}
