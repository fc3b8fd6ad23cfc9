/**
 * Finds the decision explain shows, from what the store recorded and nothing else: the bot's
 * `GET /explain/...` and `hookbot explain` make no API call to answer, so a caller cannot make the
 * bot spend its token or tell projects it cannot see from projects without decisions.
 *
 * The project is its id or its `namespace/project` path, as the recorded decisions name it. The
 * number is read first as the one people see (the iid: `#4`, `!7`), then as the global id (what API
 * paths use). When it is both (`#4` is one item, id 4 another), the iid wins and the answer says
 * which other item the global id is.
 */
import { queuePosition } from '../../state/index.ts';
import type { DecisionRecord, PausedRule, QueueControl, QueueEntry } from '../../state/index.ts';
import { pauseReason } from './brake.ts';
import { echoPauses } from './echo-brake.ts';

export type ExplainKind = 'issue' | 'merge_request';

const KINDS: Readonly<Record<string, ExplainKind>> = {
  issue: 'issue',
  mr: 'merge_request',
  merge_request: 'merge_request',
};

/** `issue`, `mr` or `merge_request` as a kind; undefined for anything else. */
export function explainKind(text: string): ExplainKind | undefined {
  return Object.hasOwn(KINDS, text) ? KINDS[text] : undefined;
}

export interface ExplainQuery {
  /** The project's id (`12`) or path (`acme/web`, compared ignoring case). */
  project: string;
  kind: ExplainKind;
  /** The iid people see, or the global id. */
  number: number;
}

export interface RecordedItem {
  kind: string;
  projectId: string;
  id: number;
  /** From the decision: what explain shows; undefined when a decision does not say. */
  project: string | undefined;
  iid: number | undefined;
}

export type ExplainAnswer =
  | {
      found: true;
      record: DecisionRecord;
      item: RecordedItem;
      /** How the number was read. */
      by: 'iid' | 'id';
      /** Set when the number could mean another item too, or was read as the global id. */
      note?: string;
    }
  | { found: false; message: string };

/** The item a decision is about: its key (`<kind>:<project id>:<id>`) and the evaluation's item. */
export function recordedItem(record: DecisionRecord): RecordedItem {
  const [kind = '', projectId = '', id = ''] = record.itemKey.split(':');
  const item = (record.decision as { evaluation?: { item?: { project?: unknown; iid?: unknown } } } | null)
    ?.evaluation?.item;
  return {
    kind,
    projectId,
    id: Number(id),
    project: typeof item?.project === 'string' ? item.project : undefined,
    iid: typeof item?.iid === 'number' ? item.iid : undefined,
  };
}

const sign = (kind: ExplainKind): string => (kind === 'issue' ? '#' : '!');
const kindName = (kind: ExplainKind): string => (kind === 'issue' ? 'issue' : 'merge request');

/** `issue 4 of acme/web`, `merge request 7 of project 12`: for messages. */
export function itemName(query: ExplainQuery): string {
  const project = /^\d+$/.test(query.project) ? `project ${query.project}` : query.project;
  return `${kindName(query.kind)} ${query.number} of ${project}`;
}

/**
 * `records`: the latest decision of each item the store keeps. `queue`: the store's merge queue
 * entries; a queued merge request's answer starts with where it stands (`merge queue: position 2 of
 * 4 ...; waiting for ci/test on 3f2a1c9`). `paused`: the store's paused rules; the answer for an
 * item of a project where the echo brake holds a rule starts with it (`paused: rule "swap" wrote 10
 * times to #4 in 3 s, each time after the bot's own change ...; approve with ...`), whenever the
 * decision shown was made.
 */
export function findDecision(
  records: readonly DecisionRecord[],
  query: ExplainQuery,
  queue?: {
    entries: readonly QueueEntry[];
    now: number;
    paused?: readonly PausedRule[];
    controls?: readonly QueueControl[];
  },
): ExplainAnswer {
  const answer = findRecorded(records, query);
  if (!answer.found || !queue) return answer;
  const notes: string[] = [];
  const project = answer.item.project;
  if (project !== undefined && queue.paused)
    for (const paused of echoPauses({ pausedRules: () => [...(queue.paused ?? [])] }, { project }))
      notes.push(`paused: ${pauseReason(paused)}`);
  const position = queuePosition(queue.entries, answer.record.itemKey, queue.now, queue.controls);
  if (position) notes.push(`merge queue: ${position}`);
  if (answer.note) notes.push(answer.note);
  return notes.length === 0 ? answer : { ...answer, note: notes.join('\n') };
}

function findRecorded(records: readonly DecisionRecord[], query: ExplainQuery): ExplainAnswer {
  const byProjectId = /^\d+$/.test(query.project);
  const wantedPath = query.project.toLowerCase();
  const candidates = records
    .map((record) => ({ record, item: recordedItem(record) }))
    .filter(
      ({ item }) =>
        item.kind === query.kind &&
        (byProjectId ? item.projectId === query.project : item.project?.toLowerCase() === wantedPath),
    );
  const byIid = candidates.find(({ item }) => item.iid === query.number);
  const byId = candidates.find(({ item }) => item.id === query.number);
  const n = query.number;
  if (byIid) {
    const other = byId && byId.item.id !== byIid.item.id ? byId.item : undefined;
    return {
      found: true,
      ...byIid,
      by: 'iid',
      ...(other && {
        note: `${n} is read as ${sign(query.kind)}${n}, the number people see; the ${kindName(query.kind)} whose global id is ${n} is ${sign(query.kind)}${other.iid ?? '?'}`,
      }),
    };
  }
  if (byId)
    return {
      found: true,
      ...byId,
      by: 'id',
      note: `${n} is read as the global id (no decision is recorded for ${sign(query.kind)}${n}): this is ${sign(query.kind)}${byId.item.iid ?? '?'}`,
    };
  return { found: false, message: `no decision recorded for ${itemName(query)}` };
}

/**
 * What is wrong with a project reference given by a caller, or undefined: an id, or a path of
 * names separated by `/`; a `.` or `..` step is refused (in a URL it names another resource).
 */
export function projectRefProblem(project: string): string | undefined {
  if (/^\d+$/.test(project)) return undefined;
  const steps = project.split('/');
  if (steps.some((step) => step === '.' || step === '..'))
    return `"${project.slice(0, 100)}" is not a project: "." and ".." are not project names`;
  if (steps.length < 2 || steps.some((step) => step === '' || /\s/.test(step)))
    return `"${project.slice(0, 100)}" is not a project: give namespace/project (e.g. acme/web) or the project id`;
  return undefined;
}

/** `4`, `#4` or `!4` as a number; undefined when it is not a positive integer. */
export function itemNumber(text: string): number | undefined {
  const match = /^[#!]?([1-9]\d{0,15})$/.exec(text);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}
