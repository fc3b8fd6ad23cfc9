/**
 * What a scenario hands back: its figures, the expectations that failed (each in words, with the
 * figures that show it), and its share of the run's totals, which the runner sums into the summary.
 */

export interface Totals {
  /** Distinct good deliveries the scenarios meant to deliver. */
  sent: number;
  /** Of those, answered 202 (accepted, or duplicate of an accepted one). */
  accepted: number;
  /** Accepted ones whose effect (one comment) is in the sandbox. */
  processed: number;
  /** Accepted ones with no effect. */
  lost: number;
  /** Effects beyond the first (a second comment on one issue). */
  duplicated: number;
  /** Bad deliveries sent. */
  badInputs: number;
  /** Bad deliveries answered with something else than the expected status and message. */
  wrongAnswers: number;
  /** Deliberate kill -9s. */
  kills: number;
  /** Bot processes that died on their own (or exited non-zero when stopped). */
  crashes: number;
  /** Broken rule files and configs tried. */
  badFiles: number;
  /** Lines of bot output that held a secret. */
  leaks: number;
}

export const zeroTotals = (): Totals => ({
  sent: 0,
  accepted: 0,
  processed: 0,
  lost: 0,
  duplicated: 0,
  badInputs: 0,
  wrongAnswers: 0,
  kills: 0,
  crashes: 0,
  badFiles: 0,
  leaks: 0,
});

export interface ScenarioResult {
  name: string;
  seconds: number;
  figures: Record<string, number | string>;
  failures: string[];
  totals: Partial<Totals>;
}

/** Collects failed expectations as it goes, so a scenario reports every problem, not the first. */
export class Expectations {
  readonly failures: string[] = [];

  /** `value` must be `expected`; the message names both. */
  equal(what: string, value: number | string, expected: number | string): void {
    if (value !== expected) this.failures.push(`${what}: ${value} (expected ${expected})`);
  }

  zero(what: string, value: number, detail?: string): void {
    if (value !== 0) this.failures.push(`${what}: ${value} (expected 0)${detail ? `: ${detail}` : ''}`);
  }

  true(what: string, ok: boolean, detail?: string): void {
    if (!ok) this.failures.push(`${what}${detail ? `: ${detail}` : ''}`);
  }
}

export function addTotals(into: Totals, part: Partial<Totals>): void {
  for (const [key, value] of Object.entries(part) as [keyof Totals, number][]) into[key] += value;
}

/** The last lines of a bot's output that matter to a failure: warnings and errors first. */
export function notableLines(output: string, max = 15): string[] {
  const lines = output.split('\n').filter((line) => line.length > 0);
  const notable = lines.filter((line) => /"level":(40|50|60)|\bERROR\b|\bWARN\b|Error|error/.test(line));
  return (notable.length > 0 ? notable : lines).slice(-max).map((line) => line.slice(0, 600));
}
