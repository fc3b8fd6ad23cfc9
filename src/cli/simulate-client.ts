import {
  type Client,
  type ClientOptions,
  clientOver,
  createHttp,
  refuseWrites,
  type Http,
  type RequestSpec,
} from '../api/index.ts';
/**
 * The API clients of `hookbot simulate`, which must never write: online, every call but a GET is
 * refused before it leaves the process (the snapshot reader and the hint resolver only read, and
 * the dry-run executor calls nothing: this makes it a guarantee rather than a habit); offline, no
 * call is made at all.
 */

/** A client that reads through the API and refuses to write. */
export function readOnlyClient(options: ClientOptions): Client {
  return clientOver(
    refuseWrites(
      createHttp(options),
      (spec) => `simulate makes no write: refused ${spec.method} ${spec.route} (a bug: please report it)`,
    ),
    options.statusTrust,
  );
}

/** A client with no server behind it: the offline simulation hands it to code that must not call. */
export function offlineClient(): Client {
  const refuse = (spec: RequestSpec<unknown>): Error =>
    new Error(`offline simulation: no server to ${spec.method} ${spec.route} (give --api and --token)`);
  const http: Http = {
    request: (spec) => Promise.reject(refuse(spec)),
    requestRaw: (spec) => Promise.reject(refuse(spec)),
    requestChange: (spec) => Promise.reject(refuse(spec)),
    paginate: (spec) => ({
      [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(refuse(spec)) }),
    }),
    all: (spec) => Promise.reject(refuse(spec)),
    stats: { calls: 0, byRoute: new Map(), reset: () => undefined },
    apiUrl: 'offline',
  };
  return clientOver(http);
}
