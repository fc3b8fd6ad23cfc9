/**
 * When scheduled rules run: `hourly`, `daily`, `weekly`, `every <duration>` or a five-field cron
 * line. The scheduler owns the timers; this only says what is well formed.
 */
import { z } from 'zod';
import { didYouMean } from '../../text/index.ts';
import { cronProblem } from '../../time/index.ts';
import { DURATION_PATTERN } from '../../time/index.ts';

export const NAMED_SCHEDULES = ['hourly', 'daily', 'weekly'] as const;

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
