/**
 * The status page as one server-rendered HTML document, from `StatusData` (already redacted). Every
 * value goes through `markup` (escaped); the only markup not built that way is the stylesheet.
 */
import type { ActionView, DecisionView, ParkedView } from './decision-view.ts';
import type { DeliveryInfo } from './delivery-log.ts';
import { markup, trusted, type Html, type HtmlValue } from './html.ts';
import type { QueueRemovalView, QueueView, StatusData, SweepView, WatchView } from './status-data.ts';
import { STATUS_CSS } from './status-style.ts';
import { badge, explainAnchor, section, table, when } from './render-parts.ts';
import { counted } from '../text/index.ts';

/** `0.4 ms`, `12 ms`: fast answers are the normal case, so they keep a decimal. */
const msText = (ms: number): string => `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;

function deliveriesSection(data: StatusData): Html {
  const { recent, pending, oldestPendingAt } = data.deliveries;
  const waiting =
    pending === 0
      ? markup`<p class="muted">No accepted delivery is waiting to be processed.</p>\n`
      : markup`<p>${counted(pending, 'accepted delivery is', 'accepted deliveries are')} waiting to be processed (oldest received ${when(oldestPendingAt, data.now)}).</p>\n`;
  const rows = table<DeliveryInfo>(
    recent,
    [
      { label: 'When', cell: (d) => when(d.at, data.now) },
      { label: 'Kind', cell: (d) => d.kind ?? markup`<span class="muted">unknown</span>` },
      { label: 'Outcome', cell: (d) => badge(d.outcome) },
      { label: 'HTTP', cell: (d) => d.status },
      { label: 'Answered in', cell: (d) => msText(d.ackMs) },
    ],
    'No delivery since the bot started.',
  );
  return section('deliveries', 'Recent deliveries', recent.length, [waiting, rows]);
}

/** `acme/web !7`, `acme/web #3`, or the item key when the record names no item. */
function itemLabel(decision: DecisionView): string {
  const item = decision.item;
  if (!item) return decision.itemKey;
  const sign = item.kind === 'merge_request' ? '!' : '#';
  return `${item.project} ${item.iid !== undefined ? `${sign}${item.iid}` : `id ${item.id}`}`;
}

function planList(decision: DecisionView): Html {
  if (decision.plan.length === 0) return markup` <span class="muted">nothing planned</span>`;
  const steps = decision.plan.map((step) => {
    const op = step.op ? markup` <code>${step.op}</code>` : '';
    const reason = step.reason ? markup`: ${step.reason}` : '';
    return markup`<li><strong>${step.rule}</strong> → ${step.action}${op}${reason}</li>`;
  });
  return markup`<ul>${steps}</ul>`;
}

function executionList(decision: DecisionView): HtmlValue {
  if (decision.execution.length === 0) return '';
  const calls = decision.execution.map((call) => {
    const detail = call.detail ? markup`: ${call.detail}` : '';
    const error =
      call.error && call.error !== call.detail ? markup` <span class="bad">(${call.error})</span>` : '';
    const parked = call.parked ? markup` <span class="bad">[parked: ${call.parked}]</span>` : '';
    return markup`<li>${badge(call.status)} <code>${call.call}</code>${detail}${error}${parked}</li>`;
  });
  return markup`<ul>${calls}</ul>\n`;
}

function decisionCard(decision: DecisionView, now: number): Html {
  const item = decision.item;
  const title = item?.title ? markup` · ${item.title}` : '';
  const facts = [
    decision.event ? markup` · <small>on ${decision.event}</small>` : '',
    item?.state ? markup` · <small>${item.state}</small>` : '',
    decision.dryRun ? markup` · ${badge('dry run', 'warn')}` : '',
  ];
  const matched = decision.matched.length
    ? decision.matched.map((rule, index) => markup`${index ? ', ' : ''}<strong>${rule}</strong>`)
    : markup`<span class="muted">none</span>`;
  const unreadable = decision.unreadable
    ? markup`<p class="bad">This decision record could not be read.</p>\n`
    : '';
  const explanation = decision.text
    ? markup`<details><summary>Explanation</summary><pre>${decision.text}</pre></details>\n`
    : '';
  const id = decision.id === undefined ? '' : markup` id="decision-${decision.id}"`;
  const explain = decision.explain ? markup` · ${explainAnchor(decision.explain, 'explain')}` : '';
  const acted = decision.acted ? markup` · ${badge('acted', 'ok')}` : '';
  return markup`<article class="card"${id}>
<header><h3>${itemLabel(decision)}${title}</h3><small>${when(decision.at, now)}</small></header>
<p><small class="mono">${decision.itemKey}${decision.id === undefined ? '' : ` · decision ${decision.id}`}</small>${facts}${acted}${explain}</p>
${unreadable}<p>Rules matched: ${matched}</p>
<p>Plan:${planList(decision)}</p>
<p>Outcome: ${decision.outcome}</p>
${executionList(decision)}${explanation}</article>
`;
}

function decisionsSection(data: StatusData): Html {
  const body = data.decisions.length
    ? data.decisions.map((decision) => decisionCard(decision, data.now))
    : markup`<p class="muted">No decision recorded yet.</p>\n`;
  return section('decisions', 'Decisions', data.decisions.length, body);
}

/** `acme/web !7`, or the item key when the decision names no item. */
function actionItem(action: ActionView): Html {
  const item = action.item;
  if (!item) return markup`<small class="mono">${action.itemKey}</small>`;
  const sign = item.kind === 'merge_request' ? '!' : '#';
  return markup`${item.project} ${item.iid !== undefined ? `${sign}${item.iid}` : `id ${item.id}`}`;
}

function actionsSection(data: StatusData): Html {
  const onPage = new Set(
    data.decisions.flatMap((decision) => (decision.id === undefined ? [] : [decision.id])),
  );
  const intro = data.actions.length
    ? markup`<p class="muted">What the recent decisions sent, withdrew or parked, newest first, each with the decision that planned it (explain keeps an item's decisions that acted apart from its newest evaluations).</p>\n`
    : '';
  const rows = table<ActionView>(
    data.actions,
    [
      { label: 'When', cell: (a) => when(a.at, data.now) },
      { label: 'Item', cell: actionItem },
      { label: 'Rule', cell: (a) => a.rule ?? '' },
      { label: 'Outcome', cell: (a) => badge(a.status) },
      {
        label: 'Call',
        cell: (a) =>
          markup`<code>${a.call}</code>${a.detail ? markup`: ${a.detail}` : ''}${a.error ? markup` <span class="bad">(${a.error})</span>` : ''}${a.parked ? markup` <span class="bad">[parked: ${a.parked}]</span>` : ''}`,
      },
      {
        label: 'Planned by',
        cell: (a) => {
          if (a.decision === undefined) return explainAnchor(a.explain, 'explain');
          const card = onPage.has(a.decision)
            ? markup`<a href="#decision-${a.decision}">decision ${a.decision}</a>`
            : markup`decision ${a.decision}`;
          return markup`${card}${a.explain ? markup` · ${explainAnchor(a.explain, 'explain')}` : ''}`;
        },
      },
    ],
    'No action in the recent decisions.',
  );
  return section('actions', 'Actions', data.actions.length, [intro, rows]);
}

function waitsFor(watch: WatchView): Html {
  if (watch.required.length === 0) return markup`<span class="muted">the head's statuses</span>`;
  const names = watch.required.map((name, index) => markup`${index ? ' ' : ''}${badge(name, 'warn')}`);
  return markup`${names} <small>to succeed</small>`;
}

function watchSection(data: StatusData): Html {
  const rows = table<WatchView>(
    data.mergeWatch,
    [
      {
        label: 'Merge request',
        cell: (w) =>
          markup`${w.project} <span class="muted">MR id</span> ${w.mrId}<br><small class="mono">${w.itemKey}</small>`,
      },
      { label: 'Rule', cell: (w) => w.rule },
      { label: 'Waits for', cell: waitsFor },
      { label: 'Head', cell: (w) => markup`<code title="${w.headSha}">${w.headSha.slice(0, 12)}</code>` },
      { label: 'Since', cell: (w) => when(w.since, data.now) },
      { label: 'Armed by', cell: (w) => explainAnchor(w.explain, 'explain') },
    ],
    'No merge request is waiting to be merged.',
  );
  return section('merge-watch', 'Merge watch', data.mergeWatch.length, rows);
}

function queueSection(data: StatusData): Html {
  const rows = table<QueueView>(
    data.mergeQueue,
    [
      { label: 'Queue', cell: (q) => markup`${q.project} <code>${q.targetBranch}</code> ${q.queue}` },
      { label: 'Position', cell: (q) => String(q.position) },
      {
        label: 'Merge request',
        cell: (q) => markup`!${q.iid}<br><small class="mono">${q.itemKey}</small>`,
      },
      { label: 'State', cell: (q) => q.state },
      {
        label: 'Train car',
        cell: (q) =>
          q.car
            ? markup`car ${String(q.car.position)} (${q.car.iids.map((iid) => `!${iid}`).join(', ')})<br><small class="mono">${q.car.branch}</small><br>waits for ${q.car.waitingFor.join(', ')} since ${when(q.car.since, data.now)}`
            : markup`<span class="muted">—</span>`,
      },
      {
        label: 'Lands',
        cell: (q) =>
          q.estimatedLandAt === undefined
            ? markup`<span class="muted">no estimate</span>`
            : markup`about ${when(q.estimatedLandAt, data.now)}`,
      },
      { label: 'Queued by', cell: (q) => explainAnchor(q.explain, 'explain') },
    ],
    'No merge request is queued.',
  );
  const removals = table<QueueRemovalView>(
    data.queueRemovals,
    [
      { label: 'Left', cell: (r) => when(r.at, data.now) },
      { label: 'Merge request', cell: (r) => markup`${r.project} !${String(r.iid)}` },
      { label: 'Queue', cell: (r) => markup`<code>${r.targetBranch}</code> ${r.queue}` },
      { label: 'Reason', cell: (r) => r.reason },
    ],
    'No merge request was taken out of a queue with a comment.',
  );
  const more = markup`<p>Each queue with its cars, their builds, estimates and trouble: <a href="status/queue">the merge queues' page</a>.</p>
`;
  return section(
    'merge-queue',
    'Merge queue',
    data.mergeQueue.length,
    markup`${more}${rows}<h3>Last removals</h3>${removals}`,
  );
}

function parkedSection(data: StatusData): Html {
  const intro = data.parked.length
    ? markup`<p class="muted">Given up after failures that retrying cannot fix; they wait for an operator.</p>\n`
    : '';
  const rows = table<ParkedView>(
    data.parked,
    [
      {
        label: 'Item',
        cell: (p) =>
          markup`${p.project ? markup`${p.project}<br>` : ''}<small class="mono">${p.itemKey}</small>`,
      },
      { label: 'Rule', cell: (p) => p.rule },
      { label: 'Action', cell: (p) => markup`${p.action ?? ''}${p.op ? markup` <code>${p.op}</code>` : ''}` },
      {
        label: 'Reason',
        cell: (p) =>
          markup`<span class="bad">${p.reason}</span>${p.lastError ? markup`<br><small>last error: ${p.lastError}</small>` : ''}`,
      },
      { label: 'Tries', cell: (p) => p.attempts },
      { label: 'Parked', cell: (p) => when(p.parkedAt, data.now) },
      { label: 'Planned by', cell: (p) => explainAnchor(p.explain, 'explain') },
    ],
    'No parked action.',
  );
  return section('parked', 'Parked actions', data.parked.length, [intro, rows]);
}

function parkedDeliveriesSection(data: StatusData): Html {
  if (data.parkedDeliveries.length === 0) return markup``;
  const intro = markup`<p class="muted">Set aside unprocessed: the process stopped during their processing, again when each was tried alone. They are not tried again; the log has the delivery's id, and a new event on the item is processed as usual.</p>
`;
  const rows = table<StatusData['parkedDeliveries'][number]>(
    data.parkedDeliveries,
    [
      { label: 'Delivery', cell: (p) => markup`${p.kind}<br><small class="mono">${p.id}</small>` },
      { label: 'Reason', cell: (p) => markup`<span class="bad">${p.reason}</span>` },
      { label: 'Tries', cell: (p) => p.attempts },
      { label: 'Received', cell: (p) => when(p.receivedAt, data.now) },
      { label: 'Parked', cell: (p) => when(p.at, data.now) },
    ],
    'No parked delivery.',
  );
  return section('parked-deliveries', 'Parked deliveries', data.parkedDeliveries.length, [intro, rows]);
}

function pausedSection(data: StatusData): Html {
  const rows = table(
    data.pausedRules,
    [
      {
        label: 'Rule',
        cell: (r) =>
          r.project === undefined
            ? markup`<strong>${r.rule}</strong>`
            : markup`<strong>${r.rule}</strong> in ${r.project}<br><small>echo brake</small>`,
      },
      { label: 'Reason', cell: (r) => r.reason },
      { label: 'Since', cell: (r) => when(r.at, data.now) },
    ],
    'No rule is paused.',
  );
  return section('paused', 'Paused rules', data.pausedRules.length, rows);
}

function fleetSection(data: StatusData): Html | '' {
  const { fleet } = data;
  if (fleet === undefined) return '';
  if (fleet.error !== undefined)
    return section('fleet', 'Replicas', undefined, markup`<p class="bad">${fleet.error}</p>\n`);
  const intro = markup`<p>This page is replica <code>${fleet.replica}</code>. Pending in the whole fleet: ${String(fleet.pending ?? 0)}.</p>\n`;
  const rows = table(
    fleet.replicas ?? [],
    [
      { label: 'Replica', cell: (r) => markup`<code>${r.id}</code>` },
      { label: 'Started', cell: (r) => when(r.startedAt, data.now) },
      { label: 'Seen', cell: (r) => when(r.seenAt, data.now) },
      { label: 'Stopped', cell: (r) => when(r.stoppedAt, data.now) },
      { label: 'Deliveries held', cell: (r) => String(r.deliveries) },
      { label: 'Leases', cell: (r) => r.leases.join(', ') },
    ],
    'No replica registered.',
  );
  return section('fleet', 'Replicas', fleet.replicas?.length, [intro, rows]);
}

function nextRunCell(sweep: SweepView, now: number): Html {
  if (sweep.nextRun === undefined) return markup`<span class="muted">not scheduled</span>`;
  return markup`${when(sweep.nextRun, now)}${sweep.nextRun < now ? markup` ${badge('due', 'warn')}` : ''}`;
}

function sweepsSection(data: StatusData): Html {
  const rows = table<SweepView>(
    data.sweeps,
    [
      { label: 'Sweep', cell: (s) => markup`<code>${s.name}</code>` },
      { label: 'Next run', cell: (s) => nextRunCell(s, data.now) },
      { label: 'Last success', cell: (s) => when(s.lastSuccess, data.now) },
    ],
    'No sweep is scheduled.',
  );
  return section('sweeps', 'Sweeps', undefined, rows);
}

function rulesSection(data: StatusData): Html {
  const { rules } = data;
  const loaded =
    rules.loadedAt === undefined
      ? markup`<p class="bad">No rules loaded.</p>\n`
      : markup`<p>Loaded ${when(rules.loadedAt, data.now)} from ${counted(rules.files.length, 'file', 'files')}.</p>\n`;
  const lead = rules.refused
    ? 'The last change was refused; the rules loaded before stay in force:'
    : 'Loaded with problems (the rules of the files with problems are left out):';
  const problems = rules.problems.length
    ? markup`<div class="alert${rules.refused ? '' : ' warn'}"><p>${lead}</p><ul>${rules.problems.map(
        (problem) => markup`<li><code>${problem}</code></li>`,
      )}</ul></div>\n`
    : '';
  const files = rules.files.length
    ? markup`<ul>${rules.files.map((file) => markup`<li><code>${file}</code></li>`)}</ul>\n`
    : '';
  return section('rules', 'Rules in force', rules.files.length, [
    loaded,
    problems,
    files,
    repositorySection(data),
  ]);
}

/** Each project's .hookbot.yml: its rules in force, and the problems of a refused change. */
function repositorySection(data: StatusData): Html | string {
  const projects = data.repositoryRules;
  if (projects === undefined) return '';
  if (projects.length === 0)
    return markup`<h3>Repository rules</h3><p>No project read so far has a <code>.hookbot.yml</code>.</p>
`;
  const rows = projects.map((project) => {
    const loaded =
      project.loadedAt === undefined
        ? markup`no rules in force from it`
        : markup`${counted(project.rules, 'rule', 'rules')} in force, taken ${when(project.loadedAt, data.now)}`;
    const refused = project.problems.length
      ? markup`<div class="alert"><p>The change in ${(project.problemCommit ?? '').slice(0, 8)} was refused (hookbot/config failed)${project.loadedAt === undefined ? '' : '; the last good rules stay in force'}:</p><ul>${project.problems.map(
          (problem) => markup`<li><code>${problem}</code></li>`,
        )}</ul></div>`
      : '';
    return markup`<li><code>${project.project}</code>: ${loaded}${refused}</li>`;
  });
  return markup`<h3>Repository rules</h3><ul>${rows}</ul>
`;
}

const STAT_LABELS: Record<string, string> = {
  inbox: 'Deliveries waiting',
  inboxBytes: 'Deliveries waiting (bytes)',
  dedupKeys: 'De-duplication keys',
  outbox: 'Actions in the outbox',
  parked: 'Parked actions',
  watched: 'Merge requests watched',
  pausedRules: 'Paused rules',
  decisionItems: 'Items with a decision',
  recentDecisions: 'Recent decisions kept',
  documentBytes: 'State document (bytes)',
  journalBytes: 'Journal (bytes)',
  journalRecords: 'Journal records',
  commits: 'Commits since start',
  fsyncs: 'fsyncs since start',
  compactions: 'Compactions since start',
};

function statsSection(data: StatusData): Html {
  // Pairs of name and figure: a list that stays two columns on a phone, unlike the tables.
  const rows = Object.entries(data.stats).map(
    ([key, value]) => markup`<dt>${STAT_LABELS[key] ?? key}</dt><dd>${value.toLocaleString('en-US')}</dd>\n`,
  );
  return section('store', 'State store', undefined, markup`<dl class="pairs">\n${rows}</dl>\n`);
}

/** What needs a look, first on the page. */
function alerts(data: StatusData): Html[] {
  const out: Html[] = [];
  const { rules, parked, pausedRules } = data;
  if (rules.loadedAt === undefined) out.push(markup`<p class="alert">No rules are loaded.</p>\n`);
  else if (rules.refused)
    out.push(
      markup`<p class="alert">The last rules change was refused: see <a href="#rules">rules</a>.</p>\n`,
    );
  else if (rules.problems.length)
    out.push(markup`<p class="alert warn">Rules loaded with problems: see <a href="#rules">rules</a>.</p>\n`);
  if (parked.length)
    out.push(
      markup`<p class="alert">${counted(parked.length, 'parked action waits', 'parked actions wait')} for an operator: see <a href="#parked">parked actions</a>.</p>\n`,
    );
  if (data.parkedDeliveries.length)
    out.push(
      markup`<p class="alert">${counted(data.parkedDeliveries.length, 'delivery was', 'deliveries were')} parked after the process stopped during them: see <a href="#parked-deliveries">parked deliveries</a>.</p>\n`,
    );
  if (pausedRules.length)
    out.push(
      markup`<p class="alert warn">${counted(pausedRules.length, 'rule is', 'rules are')} paused: see <a href="#paused">paused rules</a>.</p>\n`,
    );
  return out;
}

/** The merge queues' own page, first thing under the title: where people look for their merge request. */
function queueLink(data: StatusData): Html {
  const { queues, queued, stuck, paused } = data.queueSummary;
  const size = queues
    ? markup`${counted(queued, 'merge request', 'merge requests')} in ${counted(queues, 'queue', 'queues')}`
    : markup`no merge request queued`;
  const stuckText = stuck.length
    ? markup` · <strong class="bad">cannot move: ${stuck.join('; ')}</strong>`
    : '';
  const pausedText = paused.length
    ? markup` · <strong class="warn">paused: ${paused.join('; ')}</strong>`
    : '';
  return markup`<p class="toplinks"><a href="status/queue"><strong>Merge queues</strong></a>: ${size}${stuckText}${pausedText} · <a href="status/queue">cars, estimates, removals</a></p>
`;
}

function navigation(data: StatusData): Html {
  const links: [string, string][] = [
    ['deliveries', 'Deliveries'],
    ['decisions', 'Decisions'],
    ['actions', `Actions (${data.actions.length})`],
    ['merge-watch', `Merge watch (${data.mergeWatch.length})`],
    ['merge-queue', `Merge queue (${data.mergeQueue.length})`],
    ['parked', `Parked (${data.parked.length})`],
    ['paused', `Paused rules (${data.pausedRules.length})`],
    ['sweeps', 'Sweeps'],
    ['rules', 'Rules'],
    ['store', 'Store'],
  ];
  return markup`<nav>${links.map(([id, text]) => markup`<a href="#${id}">${text}</a>`)}</nav>\n`;
}

export function renderStatusPage(data: StatusData): string {
  return markup`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>hookbot status</title>
<style>${trusted(STATUS_CSS)}</style>
</head>
<body>
<header>
<h1>hookbot status</h1>
<p class="muted">Read at ${when(data.now, data.now)} · <a href="status.json">JSON</a> · reload the page to update</p>
${queueLink(data)}${navigation(data)}${alerts(data)}</header>
<main>
${deliveriesSection(data)}${decisionsSection(data)}${actionsSection(data)}${watchSection(data)}${queueSection(data)}${parkedSection(data)}${parkedDeliveriesSection(data)}${pausedSection(data)}${sweepsSection(data)}${fleetSection(data)}${rulesSection(data)}${statsSection(data)}</main>
</body>
</html>
`.toString();
}
