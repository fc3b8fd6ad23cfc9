/**
 * The compiled build (`npm run build`: tsc to dist/) is what the Docker image runs
 * (`node dist/cli/run.js`): it must compile from the sources as they are and run without tsx.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

describe('the compiled build', () => {
  it('compiles to dist/ and runs as plain JavaScript: --version, check on the shipped rules', async () => {
    await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json']);
    expect(existsSync('dist/cli/run.js')).toBe(true);
    // No tsx here: node alone runs it (a .ts import left unrewritten would fail to load).
    const version = await run(process.execPath, ['dist/cli/run.js', '--version']);
    expect(version.stdout.trim()).toBe(pkg.version);
    const check = await run(process.execPath, ['dist/cli/run.js', 'check', 'rules']);
    expect(check.stdout).toMatch(/no problems/);
  }, 300_000);
});
