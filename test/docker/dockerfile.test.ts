/**
 * The Dockerfile cannot be built here (no container engine on these machines), so it is checked
 * the way an editor would: linted with dockerfile-utils (the validator behind VS Code's Docker
 * support), and held to the conventions. That every file it copies exists, and that the
 * build it runs produces what its ENTRYPOINT starts, is checked too (the compiled build itself is
 * tested in test/cli/build.test.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { validate } from 'dockerfile-utils';
import { describe, expect, it } from 'vitest';

const text = readFileSync('Dockerfile', 'utf8');
/** Instructions with their arguments, continuation lines joined, comments dropped. */
const instructions = text
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'))
  .map((line) => {
    const [keyword = '', ...rest] = line.split(/\s+/);
    return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
  });
const all = (keyword: string) => instructions.filter((i) => i.keyword === keyword).map((i) => i.args);

describe('Dockerfile', () => {
  it('has no problems by dockerfile-utils (syntax, instructions, arguments)', () => {
    const problems = validate(text, {}).map((d) => `line ${d.range.start.line + 1}: ${d.message}`);
    expect(problems).toEqual([]);
  });

  it('is multi-stage: the runtime stage takes the compiled build and production dependencies only', () => {
    const stages = all('FROM');
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(stages.every((from) => /^node:\d+-\S+ AS \w+$/i.test(from))).toBe(true);
    expect(all('RUN')).toContain('npm run build');
    expect(all('RUN').some((run) => run.includes('npm ci --omit=dev'))).toBe(true);
    expect(all('COPY')).toContain('--from=build /app/dist ./dist');
  });

  it('runs as a non-root user, with a health check on /healthz, state on a volume', () => {
    expect(all('USER')).toEqual(['node']);
    expect(all('HEALTHCHECK').join(' ')).toContain('/healthz');
    expect(all('VOLUME')).toEqual(['["/app/data"]']);
    expect(all('ENTRYPOINT')).toEqual(['["node", "dist/cli/run.js"]']);
  });

  it('listens on every interface but leaves opening the ops routes to the operator', () => {
    const env = all('ENV').join(' ');
    expect(env).toContain('HOOKBOT_HOST=0.0.0.0');
    // Without status credentials the bot then refuses to start, saying what to set.
    expect(env).not.toContain('HOOKBOT_ALLOW_PUBLIC_OPS');
    expect(env).not.toContain('HOOKBOT_STATUS_PASSWORD');
  });

  it('copies only files that exist, and its entry point is what the build emits', () => {
    const sources = all('COPY')
      .filter((args) => !args.startsWith('--from'))
      .flatMap((args) => args.split(/\s+/).slice(0, -1));
    expect(sources.filter((path) => !existsSync(path))).toEqual([]);
    // tsconfig.build.json compiles src/ to dist/: src/cli/run.ts becomes dist/cli/run.js.
    const build = JSON.parse(readFileSync('tsconfig.build.json', 'utf8')) as {
      compilerOptions: { outDir: string; rootDir: string };
    };
    expect(build.compilerOptions).toMatchObject({ outDir: 'dist', rootDir: 'src' });
    expect(existsSync('src/cli/run.ts')).toBe(true);
  });
});
