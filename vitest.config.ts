import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Tests start real HTTP servers on loopback; keep them isolated per file.
    pool: 'forks',
    // Files at once: one more than the cores. Most of a file's time is spent waiting on other
    // processes (the sandbox's git, PostgreSQL, the bot under test, a simulated CI's build), so
    // vitest's default (cores - 1, one file at a time on 2 cores) left the machine idle. Measured on
    // the 2-core machine, the whole suite: 6 min 56 s one at a time, 3 min 44 s three at a time,
    // 3 min 57 s four at a time (docs/benchmarks.md, "npm test's time"). Every test waits for conditions, so
    // the extra load changes durations, not outcomes. `--maxWorkers=N` overrides it.
    maxWorkers: availableParallelism() + 1,
    // A backstop for a test that hangs, not a measure: every test waits for conditions. On a 2-core
    // machine shared with other work (CI beside a developer's runs, eight test files at once), a test
    // that starts processes (serve, the installed binary, a heap-bounded restart) took past 20 s with
    // nothing wrong; 60 s keeps a hang short and a busy machine green.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
