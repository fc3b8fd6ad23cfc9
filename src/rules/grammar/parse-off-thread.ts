/**
 * Parsing a rule file the bot does not control (a repository's `.hookbot.yml`) away from the event
 * loop that answers hooks (issue 28): on a worker thread, with a time bound. The parse bounds
 * (parse-bounds.ts) keep a parse linear, but linear in 256 KB of YAML is still a fifth of a second
 * and more on a busy machine, which every hook and `/healthz` would wait for.
 *
 * One worker for the process, started at the first parse and kept (unreferenced: it never holds the
 * process up); one parse at a time. A parse that takes longer than the bound ends the worker (the
 * next parse starts a new one) and the file is refused with a problem saying so. Where no worker can
 * be started, files are parsed on the calling thread, as the rules folder's are.
 *
 * The worker runs this very module: started from its own URL, it answers parse requests. Under
 * tsx (sources run as TypeScript) the worker registers tsx first; the compiled build needs nothing.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { ParsedRuleFile } from './parse-file.ts';
import { fromTransfer, parseForTransfer, type TransferredParse } from './parse-transfer.ts';

/** How long one parse may take on the worker, its start included. */
const PARSE_TIMEOUT_MS = 20_000;

interface Request {
  id: number;
  text: string;
  file: string;
}

type Answer = { id: number; parsed: TransferredParse } | { id: number; error: string } | { ready: true };

const ROLE = 'hookbot-rule-file-parser';

// In the worker: answer each request with the parse, as plain data.
if (!isMainThread && (workerData as { role?: string } | null)?.role === ROLE) {
  parentPort!.on('message', (request: Request) => {
    try {
      parentPort!.postMessage({ id: request.id, parsed: parseForTransfer(request.text, request.file) });
    } catch (error) {
      parentPort!.postMessage({ id: request.id, error: String((error as Error)?.message ?? error) });
    }
  });
  parentPort!.postMessage({ ready: true } satisfies Answer);
}

/** Loads this module in the worker: tsx first when the sources are TypeScript. */
const BOOT = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  if (workerData.tsx) (await import(workerData.tsx)).register();
  await import(workerData.module);
})().catch((error) => parentPort.postMessage({ bootError: String((error && error.stack) || error) }));
`;

function tsxLoader(): string | undefined {
  if (!import.meta.url.endsWith('.ts')) return undefined;
  // The ESM entry of tsx's API (its CommonJS one cannot register from a worker).
  if (typeof import.meta.resolve === 'function') return import.meta.resolve('tsx/esm/api');
  const cjs = createRequire(import.meta.url).resolve('tsx/esm/api');
  return pathToFileURL(cjs.replace(/\.cjs$/, '.mjs')).href;
}

interface Running {
  worker: Worker;
  ready: Promise<void>;
  pending: Map<number, (answer: Answer) => void>;
}

let running: Running | undefined;
/** Set once a worker could not be started: parse on the calling thread from then on. */
let unavailable = false;
let nextId = 1;
let queue: Promise<unknown> = Promise.resolve();

function start(): Running {
  const worker = new Worker(BOOT, {
    eval: true,
    workerData: { role: ROLE, module: import.meta.url, tsx: tsxLoader() },
    // A parse that ran away ends the worker, never the bot's heap.
    resourceLimits: { maxOldGenerationSizeMb: 256 },
  });
  const pending = new Map<number, (answer: Answer) => void>();
  const ready = new Promise<void>((resolve, reject) => {
    worker.on('message', (message: Answer | { bootError: string }) => {
      if ('bootError' in message) return reject(new Error(message.bootError));
      if ('ready' in message) return resolve();
      pending.get(message.id)?.(message);
      pending.delete(message.id);
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the parser's worker exited (${code})`)));
  });
  const current: Running = { worker, ready, pending };
  worker.once('exit', () => {
    if (running === current) running = undefined;
    for (const answer of pending.values()) answer({ id: 0, error: "the parser's worker stopped" });
  });
  // Last: adding a listener refers the worker again, and it must never hold the process up.
  worker.unref();
  return current;
}

async function parseOnWorker(text: string, file: string): Promise<ParsedRuleFile> {
  running ??= start();
  const current = running;
  const id = nextId++;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), PARSE_TIMEOUT_MS);
  });
  try {
    const answered = current.ready.then(
      () =>
        new Promise<Answer>((resolve) => {
          current.pending.set(id, resolve);
          current.worker.postMessage({ id, text, file } satisfies Request);
        }),
    );
    const answer = await Promise.race([answered, timedOut]);
    if (answer === 'timeout') {
      await current.worker.terminate();
      return refused(file, `checking the file took longer than ${PARSE_TIMEOUT_MS / 1000} s: refused`);
    }
    if ('parsed' in answer) return fromTransfer(answer.parsed);
    if ('error' in answer) return refused(file, `the file could not be checked: ${answer.error}`);
    throw new Error('unexpected answer from the parser');
  } finally {
    clearTimeout(timer);
  }
}

function refused(file: string, message: string): ParsedRuleFile {
  return {
    file,
    spec: null,
    extends: [],
    problems: [{ file, line: 1, column: 1, message }],
    locate: () => ({ line: 1, column: 1 }),
  };
}

/**
 * The file parsed on the worker, one parse at a time. `onFallback` hears once why the worker could
 * not be started (the parse then runs here).
 */
export function parseRuleFileOffThread(
  text: string,
  file: string,
  onFallback?: (error: unknown) => void,
): Promise<ParsedRuleFile> {
  const run = async (): Promise<ParsedRuleFile> => {
    if (!unavailable)
      try {
        return await parseOnWorker(text, file);
      } catch (error) {
        if (running) await running.worker.terminate().catch(() => undefined);
        running = undefined;
        unavailable = true;
        onFallback?.(error);
      }
    return fromTransfer(parseForTransfer(text, file));
  };
  const next = queue.then(run, run);
  queue = next.catch(() => undefined);
  return next;
}
