/**
 * The queue page (`/status/queue`) as one server-rendered HTML document, from `QueuePageData`
 * (already redacted): each queue with its trouble first, a train's cars one row each, the merge
 * requests waiting for a car, a serial queue's order, and the last removals. Branch names break only
 * after `/`, `-`, `_` or `.` (never inside a word); merge requests read `group/project!16`.
 */
import { markup, trusted, type Html } from './html.ts';
import type { CarRow, CarState, Estimate, QueueCard, QueueMember, QueuePageData } from './queue-data.ts';
import { durationText } from './queue-data.ts';
import { badge, section, table, when, type Tone } from './render-parts.ts';
import { STATUS_CSS } from './status-style.ts';
import { counted } from '../text/index.ts';

const WBR = trusted('<wbr>');

/** A branch name that may break after `/`, `-`, `_` or `.`, and nowhere else. */
export function branchName(name: string): Html {
  const parts = name.split(/(?<=[/_.-])/);
  return markup`<code class="branch">${parts.map((part, i) => (i ? [WBR, part] : part))}</code>`;
}

/** A project or queue name, breaking as a branch name does (after `/`, `-`, `_` or `.`). */
function nameOf(name: string): Html {
  const parts = name.split(/(?<=[/_.-])/);
  return markup`<span class="branch">${parts.map((part, i) => (i ? [WBR, part] : part))}</span>`;
}

const sha = (commit: string | undefined): Html =>
  commit
    ? markup`<code title="${commit}">${commit.slice(0, 7)}</code>`
    : markup`<span class="muted">none</span>`;

const STATES: Record<CarState, [label: string, tone: Tone]> = {
  not_started: ['not started', 'warn'],
  running: ['running', 'warn'],
  passed: ['passed', 'ok'],
  failed: ['failed', 'bad'],
  landing: ['landing', 'ok'],
};

function member(m: QueueMember): Html {
  const ref = m.explain
    ? markup`<a class="ref" href="${m.explain}">${m.ref}</a>`
    : markup`<span class="ref">${m.ref}</span>`;
  const title = m.title ? markup` <span class="muted">${m.title}</span>` : '';
  const front = m.front ? markup` ${badge(`moved to the front by ${m.front.by}`, 'warn')}` : '';
  return markup`<div class="member">${ref}${title}${front}</div>`;
}

function estimateCell(estimate: Estimate, now: number): Html {
  if (estimate.kind === 'none') return markup`<span class="muted">${estimate.text}</span>`;
  if (estimate.kind === 'any_moment')
    return markup`<strong>any moment</strong>${estimate.text === 'any moment' ? '' : markup`<br><small>${estimate.text.replace(/^any moment: /, '')}</small>`}`;
  return markup`<strong>${estimate.text}</strong><br><small>${when(estimate.at, now)}</small>`;
}

function timeoutCell(timeoutAt: number | undefined, now: number): Html {
  if (timeoutAt === undefined) return markup`<span class="muted">—</span>`;
  const left = timeoutAt - now;
  if (left <= 0) return markup`<span class="bad">over: judged at the next run</span>`;
  return markup`${durationText(left)} left<br><small>${when(timeoutAt, now)}</small>`;
}

function carCell(car: CarRow): Html {
  const built =
    car.builtAs === car.number
      ? ''
      : markup`<br><small class="muted">built as car ${String(car.builtAs)}</small>`;
  return markup`<strong class="nowrap">car ${String(car.number)}</strong>${built}`;
}

function buildCell(car: CarRow): Html {
  const [label, tone] = STATES[car.state];
  const waits = car.waitingFor.length
    ? markup`<br><small>waiting for ${car.waitingFor.map((name, i) => markup`${i ? ', ' : ''}<code>${name}</code>`)}</small>`
    : '';
  const text =
    car.state === 'failed'
      ? `${(car.failed ?? []).join(', ')} failed: it is split, or taken out, when it is the front car`
      : car.stateText.replace(/^[a-z ]+: /, '');
  return markup`${badge(label, tone)} ${text}${waits}`;
}

function carsTable(card: QueueCard, now: number): Html {
  return table<CarRow>(
    card.cars,
    [
      { label: 'Car', cell: carCell },
      { label: 'Merge requests', cell: (c) => c.members.map(member) },
      { label: 'Build', cell: buildCell },
      { label: 'Since', cell: (c) => when(c.since, now) },
      { label: 'Timeout', cell: (c) => timeoutCell(c.timeoutAt, now) },
      { label: 'Lands', cell: (c) => estimateCell(c.estimate, now) },
      {
        label: 'Branch',
        cell: (c) => markup`${branchName(c.branch)}<br><small>${sha(c.sha)} on ${sha(c.base)}</small>`,
      },
    ],
    'No car is built: the train is empty or waits to build one.',
  );
}

function trainBody(card: QueueCard, now: number): Html {
  const seen =
    card.buildMs === undefined
      ? markup`<p class="muted">No build has finished on this queue yet: estimates start with the first one (a car behind the front that passes counts).</p>\n`
      : markup`<p class="muted">Estimates use the last build time seen on this queue: ${durationText(card.buildMs)}.</p>\n`;
  const waiting = card.waiting.length
    ? markup`<h3>Waiting for a car (${String(card.waiting.length)})</h3>\n${table(
        card.waiting,
        [
          { label: 'Position', cell: (w) => String(w.member.position) },
          { label: 'Merge request', cell: (w) => member(w.member) },
          { label: 'Lands', cell: (w) => estimateCell(w.estimate, now) },
        ],
        '',
      )}`
    : '';
  return markup`${seen}<h3>Cars (${String(card.cars.length)})</h3>\n${carsTable(card, now)}${waiting}`;
}

function serialBody(card: QueueCard, now: number): Html {
  return table(
    card.serial,
    [
      { label: 'Position', cell: (r) => String(r.member.position) },
      { label: 'Merge request', cell: (r) => member(r.member) },
      {
        label: 'State',
        cell: (r) =>
          markup`${r.state === 'testing' ? badge('testing', 'warn') : r.state === 'updating' ? badge('updating', 'warn') : badge('waiting', 'ok')} ${r.stateText}`,
      },
      {
        label: 'Since',
        cell: (r) => (r.since === undefined ? markup`<span class="muted">—</span>` : when(r.since, now)),
      },
      { label: 'Timeout', cell: (r) => timeoutCell(r.timeoutAt, now) },
    ],
    'No merge request is queued.',
  );
}

function troubleAlert(card: QueueCard, now: number): Html | '' {
  const t = card.trouble;
  if (!t) return '';
  const told = t.told === undefined ? '' : markup`; ${t.ref} was told in a comment ${when(t.told, now)}`;
  return markup`<div class="alert trouble"><p><strong>This queue cannot move.</strong> ${counted(t.count, 'step', 'steps')} of ${t.ref} failed in a row since ${when(t.since, now)}${told}. The last error:</p><pre>${t.error}</pre><p class="muted">It keeps its place; the bot tries again at each run. This needs the bot's operator (docs/merge-queue.md#when-the-queue-cannot-move).</p></div>\n`;
}

function queueTitle(card: QueueCard): Html {
  const shape =
    card.kind === 'train'
      ? badge(
          `train · depth ${card.depthAuto ? `auto ${card.depth} (${card.depthAuto.min}..${card.depthAuto.max})` : card.depth} · batch ${card.batch}`,
          'ok',
        )
      : badge('serial', 'ok');
  const paused = card.paused ? markup` ${badge('paused', 'bad')}` : '';
  const stuck = card.trouble ? markup` ${badge('cannot move', 'bad')}` : '';
  return markup`${nameOf(card.project)} → ${branchName(card.targetBranch)} · ${nameOf(card.queue)} queue ${shape}${paused}${stuck}`;
}

function queueSection(card: QueueCard, index: number, now: number): Html {
  const paused = card.paused
    ? markup`<p class="alert warn"><strong>Paused</strong> by ${card.paused.by} ${when(card.paused.at, now)}: ${card.paused.reason}. Nothing lands until it is resumed.</p>\n`
    : '';
  const body = card.kind === 'train' ? trainBody(card, now) : serialBody(card, now);
  const removals = table(
    card.removals,
    [
      { label: 'Left', cell: (r) => when(r.at, now) },
      {
        label: 'Merge request',
        cell: (r) => markup`<span class="ref">${r.ref}</span><br><small>at ${sha(r.sha)}</small>`,
      },
      { label: 'Reason', cell: (r) => r.reason },
    ],
    'None taken out lately.',
  );
  return markup`<section id="queue-${String(index + 1)}" class="queue">
<h2>${queueTitle(card)} <small>(${counted(card.size, 'merge request', 'merge requests')})</small></h2>
${troubleAlert(card, now)}${paused}${body}<h3>Last removals</h3>\n${removals}</section>
`;
}

export function renderQueuePage(data: QueuePageData): string {
  const nav = data.queues.length
    ? markup`<nav>${data.queues.map(
        (q, i) =>
          markup`<a href="#queue-${String(i + 1)}">${nameOf(q.project)} → ${nameOf(q.targetBranch)} · ${nameOf(q.queue)}${q.trouble ? ' (cannot move)' : ''}${q.paused ? ' (paused)' : ''}</a>`,
      )}</nav>\n`
    : '';
  const stuck = data.queues.filter((q) => q.trouble).length;
  const alert = stuck
    ? markup`<p class="alert">${counted(stuck, 'queue cannot move', 'queues cannot move')}: see below.</p>\n`
    : '';
  const body = data.queues.length
    ? data.queues.map((card, i) => queueSection(card, i, data.now))
    : section(
        'queues',
        'Merge queues',
        0,
        markup`<p class="muted">No merge request is queued, and none left a queue lately.</p>\n`,
      );
  return markup`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>hookbot merge queues</title>
<style>${trusted(STATUS_CSS)}</style>
</head>
<body class="wide">
<header>
<h1>hookbot merge queues</h1>
<p class="muted">Read at ${when(data.now, data.now)} · <a href="queue.json">JSON</a> · <a href="../status">status page</a> · reload the page to update</p>
${nav}${alert}</header>
<main>
${body}</main>
</body>
</html>
`.toString();
}
