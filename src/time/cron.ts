/**
 * The next time a five-field cron line fires (minute, hour, day of month, month, day of week), in
 * the machine's local time like cron itself and like bree's timers (config schema: "a five-field
 * cron line, in the machine's local time"). The scheduler needs it to store the next run of a
 * cron-timed sweep or rule schedule, so that a restart can tell an overdue run from an early one.
 *
 * `cronProblem` says why a line is wrong, in words for `hookbot check` and the config's problems
 * (it is called where lines are read: config schema, rules/grammar/schedule.ts); `parseCron` reads a line
 * known to be good. One grammar: `*`, numbers, ranges, steps, lists, month and weekday names,
 * 7 = Sunday.
 */

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface FieldSpec {
  min: number;
  max: number;
  /** Names, numbered from `min`. */
  names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { min: 0, max: 59 },
  { min: 0, max: 23 },
  { min: 1, max: 31 },
  { min: 1, max: 12, names: MONTHS },
  { min: 0, max: 7, names: DAYS },
];

export interface CronSchedule {
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  daysOfMonth: ReadonlySet<number>;
  months: ReadonlySet<number>;
  /** 0 = Sunday (7 is folded into 0). */
  daysOfWeek: ReadonlySet<number>;
  /** Cron's rule: when both day fields are restricted, a day matching either one fires. */
  dayOr: boolean;
}

function atom(text: string, spec: FieldSpec, line: string): number {
  const named = spec.names?.indexOf(text.toLowerCase()) ?? -1;
  const value = named >= 0 ? named + spec.min : Number(text);
  if (!/^\d+$/.test(text) && named < 0) throw new Error(`invalid cron line "${line}": "${text}"`);
  if (value < spec.min || value > spec.max)
    throw new Error(`invalid cron line "${line}": ${value} is out of range`);
  return value;
}

function field(text: string, spec: FieldSpec, line: string): Set<number> {
  const values = new Set<number>();
  for (const part of text.split(',')) {
    const [range = '', stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1)
      throw new Error(`invalid cron line "${line}": step "${stepText}"`);
    let from = spec.min;
    let to = spec.max;
    if (range !== '*') {
      const [a = '', b] = range.split('-');
      from = atom(a, spec, line);
      // `5/15` means from 5 to the end, every 15.
      to = b !== undefined ? atom(b, spec, line) : stepText !== undefined ? spec.max : from;
    }
    for (let value = from; value <= to; value += step) values.add(value);
  }
  return values;
}

export function parseCron(line: string): CronSchedule {
  const parts = line.trim().split(/\s+/);
  if (parts.length !== 5) throw new Error(`invalid cron line "${line}": 5 fields expected`);
  const [minutes, hours, daysOfMonth, months, daysOfWeek] = parts.map((text, index) =>
    field(text, FIELDS[index] as FieldSpec, line),
  ) as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
  if (daysOfWeek.delete(7)) daysOfWeek.add(0);
  return {
    minutes,
    hours,
    daysOfMonth,
    months,
    daysOfWeek,
    dayOr: parts[2] !== '*' && parts[4] !== '*',
  };
}

function dayMatches(schedule: CronSchedule, date: Date): boolean {
  const dom = schedule.daysOfMonth.has(date.getDate());
  const dow = schedule.daysOfWeek.has(date.getDay());
  return schedule.dayOr ? dom || dow : dom && dow;
}

/** Searching further than this means the line never fires (`0 0 30 2 *`: February 30th). */
const HORIZON_MS = 5 * 366 * 86_400_000;

/**
 * The first minute strictly after `after` (ms since the epoch) at which the line fires, or
 * undefined when it never does. Skips whole months, days and hours that cannot match, so a
 * search costs at most a few thousand steps.
 */
export function nextCronTime(schedule: CronSchedule, after: number): number | undefined {
  const date = new Date(after);
  date.setSeconds(0, 0);
  date.setMinutes(date.getMinutes() + 1);
  const limit = after + HORIZON_MS;
  while (date.getTime() <= limit) {
    if (!schedule.months.has(date.getMonth() + 1)) {
      date.setMonth(date.getMonth() + 1, 1);
      date.setHours(0, 0, 0, 0);
    } else if (!dayMatches(schedule, date)) {
      date.setDate(date.getDate() + 1);
      date.setHours(0, 0, 0, 0);
    } else if (!schedule.hours.has(date.getHours())) {
      date.setHours(date.getHours() + 1, 0, 0, 0);
    } else if (!schedule.minutes.has(date.getMinutes())) {
      date.setMinutes(date.getMinutes() + 1, 0, 0);
    } else {
      return date.getTime();
    }
  }
  return undefined;
}

/** The fields as `cronProblem` checks them, for its messages. */
const CHECKED_FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: 'jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec' },
  { name: 'day of week', min: 0, max: 7, names: 'sun|mon|tue|wed|thu|fri|sat' },
] as const;

/** Why a cron line is wrong, or undefined. */
export function cronProblem(line: string): string | undefined {
  const fields = line.trim().split(/\s+/);
  if (fields.length !== CHECKED_FIELDS.length)
    return `a cron line has 5 fields, this one has ${fields.length}`;
  for (const [index, field] of fields.entries()) {
    const spec = CHECKED_FIELDS[index];
    if (!spec) break;
    const names = 'names' in spec ? spec.names : '';
    const atom = names ? `(?:\\*|\\d+|${names})` : '(?:\\*|\\d+)';
    const item = new RegExp(`^${atom}(?:-${atom})?(?:/\\d+)?$`, 'i');
    for (const part of field.split(',')) {
      if (!item.test(part)) return `invalid ${spec.name} "${part}"`;
      for (const number of part.match(/\d+/g) ?? []) {
        const value = Number(number);
        if (part.includes(`/${number}`)) continue;
        if (value < spec.min || value > spec.max)
          return `${spec.name} ${value} is out of range ${spec.min}-${spec.max}`;
      }
    }
  }
  return undefined;
}
