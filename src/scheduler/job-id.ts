/**
 * The id of one sweep run, on every line it logs: `<sweep name>:<start, UTC, ISO 8601 basic to the
 * second>-<run number>`, e.g. `reconcile:20250301T140500Z-7`. The run number counts the runs this
 * scheduler has started (from 1; one scheduler per process), so ids are unique within a process
 * even when two runs start in one second; the time keeps them apart across restarts and says when the
 * run began.
 */
export function sweepJobId(name: string, startedAt: number, run: number): string {
  // A clock that gives no date (a fake one in a test) still gives an id, not a RangeError.
  const date = new Date(startedAt);
  const start = Number.isNaN(date.getTime())
    ? String(startedAt)
    : date.toISOString().replace(/\.\d+/, '').replace(/[-:]/g, '');
  return `${name}:${start}-${run}`;
}
