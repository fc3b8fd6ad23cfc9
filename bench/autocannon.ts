/**
 * autocannon with a working `idReplacement`. autocannon 8 announces each id as 27 bytes more than
 * its placeholder (`[<id>]`, 6 bytes) in Content-Length, which holds for hyperid's fixed-length ids
 * (33 characters), but it asks hyperid for variable-length ones (24 characters and up): every body
 * then came up short of its Content-Length and each server waited for bytes that never came. hyperid
 * is made to give fixed-length ids here, before autocannon loads it.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const hyperidPath = require.resolve('hyperid', { paths: [require.resolve('autocannon')] });
const hyperid = require(hyperidPath) as (options?: Record<string, unknown>) => unknown;
const fixed = Object.assign(
  (options: Record<string, unknown> = {}) => hyperid({ ...options, fixedLength: true }),
  hyperid,
);
require.cache[hyperidPath]!.exports = fixed;

const { default: autocannon } = await import('autocannon');
export default autocannon;
