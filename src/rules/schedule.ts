/**
 * When scheduled rules run: `hourly`, `daily`, `weekly`, `every <duration>` or a five-field cron
 * line. The scheduler owns the timers; this only says what is well formed.
 */
import { z } from 'zod';
import { didYouMean } from './did-you-mean.ts';
import { DURATION_PATTERN } from './duration.ts';

export const NAMED_SCHEDULES = ['hourly', 'daily', 'weekly'] as const;

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: 'jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec' },
  { name: 'day of week', min: 0, max: 7, names: 'sun|mon|tue|wed|thu|fri|sat' },
] as const;

/** Why a cron line is wrong, or undefined. */
export function cronProblem(line: string): string | undefined {
  const fields = line.trim().split(/\s+/);
  if (fields.length !== FIELDS.length) return `a cron line has 5 fields, this one has ${fields.length}`;
  for (const [index, field] of fields.entries()) {
    const spec = FIELDS[index];
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

export function scheduleProblem(text: string): { message: string; hint?: string } | undefined {
  if ((NAMED_SCHEDULES as readonly string[]).includes(text)) return undefined;
  const every = /^every (.+)$/.exec(text);
  if (every) {
    if (DURATION_PATTERN.test(every[1] ?? '')) return undefined;
    return {
      message: `invalid interval "${text}"`,
      hint: 'write every and a duration, e.g. every 6h or every 30m',
    };
  }
  if (/^\S+(\s+\S+){4}$/.test(text.trim())) {
    const problem = cronProblem(text);
    return problem ? { message: `invalid cron schedule "${text}": ${problem}` } : undefined;
  }
  const hint = didYouMean(text, NAMED_SCHEDULES);
  return {
    message: `invalid schedule "${text}"`,
    hint: hint ?? 'use hourly, daily, weekly, every <duration> (e.g. every 6h) or a cron line (5 fields)',
  };
}

export const scheduleSchema = z
  .string()
  .superRefine((text, ctx) => {
    const problem = scheduleProblem(text);
    if (problem) ctx.addIssue({ code: 'custom', message: problem.message, params: { hint: problem.hint } });
  })
  .meta({
    title: 'schedule',
    description: 'hourly, daily, weekly, every <duration> (e.g. every 6h) or a cron line (5 fields)',
    examples: ['daily', 'every 6h', '0 7 * * 1-5'],
  });
