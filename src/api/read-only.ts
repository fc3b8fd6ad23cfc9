/**
 * An Http that reads and refuses to write: every call but a GET is refused before it leaves the
 * process. `hookbot simulate`, `hookbot plan` and a merge request's plan comment read the server
 * with it, so "makes no write" is a guarantee rather than a habit.
 */
import type { Http, RequestSpec } from './http.ts';

export function refuseWrites(http: Http, refusal: (spec: RequestSpec<unknown>) => string): Http {
  const guard = <S extends RequestSpec<unknown>>(spec: S): S => {
    if (spec.method !== 'GET') throw new Error(refusal(spec));
    return spec;
  };
  return {
    request: (spec) => Promise.resolve().then(() => http.request(guard(spec))),
    requestRaw: (spec) => Promise.resolve().then(() => http.requestRaw(guard(spec))),
    requestChange: (spec) => Promise.resolve().then(() => http.requestChange(guard(spec))),
    paginate: (spec) => http.paginate(guard(spec)),
    all: (spec) => Promise.resolve().then(() => http.all(guard(spec))),
    get stats() {
      return http.stats;
    },
    apiUrl: http.apiUrl,
  };
}
