import { describe, expect, it } from 'vitest';
import { findDecision, itemNumber, projectRefProblem } from '../../../src/rules/item/find-decision.ts';
import type { DecisionRecord } from '../../../src/state/store.ts';

/** A decision as the store keeps it: keyed by global id, naming the project path and the iid. */
const record = (
  kind: string,
  projectId: number,
  id: number,
  iid: number,
  project = 'acme/web',
): DecisionRecord => ({
  itemKey: `${kind}:${projectId}:${id}`,
  at: 0,
  decision: { text: `${kind} ${iid}`, evaluation: { item: { kind, project, id, iid } } },
});

// In acme/web (id 5): issue #4 has global id 7; issue #2 has global id 4.
const RECORDS = [
  record('issue', 5, 7, 4),
  record('issue', 5, 4, 2),
  record('merge_request', 5, 11, 3),
  record('issue', 9, 20, 1, 'acme/helpdesk'),
];

describe('findDecision', () => {
  it('reads the number as the iid people see, by path or project id', () => {
    for (const project of ['acme/web', 'ACME/Web', '5']) {
      const answer = findDecision(RECORDS, { project, kind: 'issue', number: 4 });
      expect(answer).toMatchObject({ found: true, by: 'iid', item: { id: 7, iid: 4 } });
    }
  });

  it('says which item the global id is when the number is both', () => {
    const answer = findDecision(RECORDS, { project: 'acme/web', kind: 'issue', number: 4 });
    expect(answer.found && answer.note).toBe(
      '4 is read as #4, the number people see; the issue whose global id is 4 is #2',
    );
  });

  it('falls back to the global id, and says so', () => {
    const answer = findDecision(RECORDS, { project: 'acme/web', kind: 'issue', number: 7 });
    expect(answer).toMatchObject({ found: true, by: 'id', item: { id: 7, iid: 4 } });
    expect(answer.found && answer.note).toBe(
      '7 is read as the global id (no decision is recorded for #7): this is #4',
    );
  });

  it('keeps kinds and projects apart', () => {
    expect(findDecision(RECORDS, { project: 'acme/web', kind: 'merge_request', number: 3 })).toMatchObject({
      found: true,
      item: { id: 11 },
    });
    expect(findDecision(RECORDS, { project: 'acme/web', kind: 'merge_request', number: 4 })).toEqual({
      found: false,
      message: 'no decision recorded for merge request 4 of acme/web',
    });
    expect(findDecision(RECORDS, { project: 'acme/helpdesk', kind: 'issue', number: 4 })).toEqual({
      found: false,
      message: 'no decision recorded for issue 4 of acme/helpdesk',
    });
    expect(findDecision(RECORDS, { project: '77', kind: 'issue', number: 1 })).toEqual({
      found: false,
      message: 'no decision recorded for issue 1 of project 77',
    });
  });
});

describe('project references and item numbers', () => {
  it.each(['12', 'acme/web', 'group/sub/project', 'a.b/c.d'])('accepts %s', (project) => {
    expect(projectRefProblem(project)).toBeUndefined();
  });

  it.each([
    ['.', '"." is not a project: "." and ".." are not project names'],
    ['..', '".." is not a project: "." and ".." are not project names'],
    ['acme/..', '"acme/.." is not a project: "." and ".." are not project names'],
    ['./web', '"./web" is not a project: "." and ".." are not project names'],
    ['acme', '"acme" is not a project: give namespace/project (e.g. acme/web) or the project id'],
    ['acme//web', '"acme//web" is not a project: give namespace/project (e.g. acme/web) or the project id'],
  ])('refuses %s', (project, message) => {
    expect(projectRefProblem(project)).toBe(message);
  });

  it.each([
    ['4', 4],
    ['#4', 4],
    ['!12', 12],
    ['0', undefined],
    ['-1', undefined],
    ['4a', undefined],
    ['##4', undefined],
  ])('reads %s as %s', (text, number) => {
    expect(itemNumber(text)).toBe(number);
  });
});
