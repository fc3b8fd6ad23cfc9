/**
 * How often a merge request's plan is computed (plan-limit.ts): per author and per merge request in a
 * sliding window; past either, until when.
 */
import { describe, expect, it } from 'vitest';
import { createPlanLimiter } from '../../../src/rules/repository/plan-limit.ts';

const HOUR = 3_600_000;

describe('plans per author and per merge request in an hour', () => {
  it('per merge request: the fifth plan within the hour waits until the first is an hour old', () => {
    const limiter = createPlanLimiter({ perAuthor: 100, perMergeRequest: 4 });
    for (const at of [0, 10, 20, 30]) expect(limiter.take('alice', 'mr1', at)).toBeUndefined();
    expect(limiter.take('alice', 'mr1', 40)).toEqual({ by: 'merge request', limit: 4, until: HOUR });
    // Another merge request of the same author is not held by this one's count.
    expect(limiter.take('alice', 'mr2', 40)).toBeUndefined();
    // A refused plan is not counted: at the hour, one passes, then the next waits for the second.
    expect(limiter.take('alice', 'mr1', HOUR)).toBeUndefined();
    expect(limiter.take('alice', 'mr1', HOUR + 1)).toEqual({
      by: 'merge request',
      limit: 4,
      until: HOUR + 10,
    });
  });

  it('per author: across their merge requests', () => {
    const limiter = createPlanLimiter({ perAuthor: 2, perMergeRequest: 10 });
    expect(limiter.take('mallory', 'a', 0)).toBeUndefined();
    expect(limiter.take('mallory', 'b', 5)).toBeUndefined();
    expect(limiter.take('mallory', 'c', 6)).toEqual({ by: 'author', limit: 2, until: HOUR });
    expect(limiter.take('alice', 'c', 6)).toBeUndefined();
  });

  it('both reached: the later time, when a plan passes both', () => {
    const limiter = createPlanLimiter({ perAuthor: 2, perMergeRequest: 1 });
    expect(limiter.take('bob', 'x', 0)).toBeUndefined();
    expect(limiter.take('bob', 'y', 100)).toBeUndefined();
    // bob may plan again at HOUR (his first of two is an hour old), y at HOUR + 100 (its one plan).
    expect(limiter.take('bob', 'y', 200)).toEqual({ by: 'merge request', limit: 1, until: HOUR + 100 });
  });

  it('a shorter window (tests)', () => {
    const limiter = createPlanLimiter({ perAuthor: 1, perMergeRequest: 1, windowMs: 1000 });
    expect(limiter.take('a', 'm', 0)).toBeUndefined();
    expect(limiter.take('a', 'm', 999)?.until).toBe(1000);
    expect(limiter.take('a', 'm', 1000)).toBeUndefined();
  });
});
