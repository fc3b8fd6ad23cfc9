/**
 * Runs one case against the world and judges it. The oracle reads only the sandbox's own data and
 * the proxy's log of bot requests, plus the bot's state store for clause (d):
 *
 * (a) at final quiescence (faults off, deliveries released, reconcile + retries with the clock
 *     advanced + merge watch until nothing changes), every effect the final state calls for is
 *     there exactly once: one `thanks` comment per item (open items, or whose open was delivered),
 *     one `title echo` comment on the issue, `hookbot/policy` success on an open MR's head, no open
 *     MR that qualifies for `automerge` left unmerged, no open MR left armed with `do-not-merge`,
 *     `triaged` on an item that got a real, delivered `/triage` note from maint.
 *     `a-hook`: the same at each hook quiescence (a `settle` step, and the end of the steps before
 *     any sweep), for the effects whose last relevant change was DELIVERED to the bot (a lost event
 *     shows here: reconciliation would hide it later); an effect counts as planned there when the
 *     outbox holds an action of that rule for the item (a fault may hold it back).
 * (b) no merge, cancel or note-driven label happened unless the sandbox state allowed it as the
 *     bot last saw it: a merge is justified when the labels allowed it (open, `automerge`, no
 *     `do-not-merge`) at some version between the bot's last read of the MR and the merge, and
 *     ci/test was success on the merged head at some version between its last read of that head's
 *     statuses and the merge (a change after the bot's last read is a race it cannot close); likewise a cancel (armed and
 *     `do-not-merge`); a `triaged` label write needs a real note `/triage...` by maint on the item.
 * (c) no comment twice: at most one bot note per rule (marker `hookbot:rule=<rule>`) per item.
 * (d) nothing the final state forbids remains planned: no merge or cancel action (pending or
 *     parked) in the bot's outbox for an MR that does not qualify for it at the end.
 * `liveness`: the case reached quiescence, and no action of its items is still pending at the end.
 *
 * Faults and `sneak` races armed by the last steps may still hit the work that follows them; both
 * are dropped after hook quiescence, before the final sweeps.
 */
import type { NoteRec } from '../../src/sandbox/db.ts';
import { notePayload } from '../../src/sandbox/payloads/index.ts';
import type { OutboxAction } from '../../src/state/store.ts';
import type { Case, FaultTarget, Step } from './steps.ts';
import { ALICE_TOKEN, BOT_TOKEN, MAINT_TOKEN, SECRET, type BotRequest, type World } from './world.ts';

export type Clause = 'a' | 'a-hook' | 'b' | 'c' | 'd' | 'liveness';

export interface Violation {
  clause: Clause;
  message: string;
}

export interface CaseResult {
  violations: Violation[];
  /** Bot API requests made during the case. */
  requests: number;
  deliveries: number;
  ms: number;
}

interface MrFacts {
  state: string;
  labels: string[];
  head: string;
  ci: string | undefined;
  mwbs: boolean;
}

const isOpen = (state: string) => state === 'opened' || state === 'reopened';
const qualifies = (f: MrFacts) =>
  isOpen(f.state) &&
  f.labels.includes('automerge') &&
  !f.labels.includes('do-not-merge') &&
  f.ci === 'success';
const blocked = (f: MrFacts) => isOpen(f.state) && f.labels.includes('do-not-merge') && f.mwbs;

const FAULT_PATHS: Record<FaultTarget, { method: string; path: RegExp }> = {
  merge: { method: 'PUT', path: /\/merge_requests\/\d+\/merge$/ },
  cancel: { method: 'PUT', path: /\/cancel_merge_when_build_succeeds$/ },
  note: { method: 'POST', path: /\/(issues|merge_requests)\/\d+\/notes$/ },
  status: { method: 'POST', path: /\/statuses\/[0-9a-f]+$/ },
  labels: { method: 'PUT', path: /\/(issues|merge_requests)\/\d+$/ },
};

const MARKER = /<!-- hookbot:rule=([^:>]*):key=[^ >]* -->/g;

interface Performed {
  note?: { id: number; on: 'mr' | 'issue' };
  forged?: Record<string, unknown>;
}

const debug = process.env.MODEL_DEBUG
  ? (...args: unknown[]) => console.error('[model]', Math.round(performance.now()), ...args)
  : () => undefined;

let caseCounter = 0;
let forgedIds = 50_000_000;

export class SettleTimeout extends Error {}

/** Waits until the sandbox, the relay and the pipeline have nothing in flight and nothing new came. */
export async function settle(world: World, timeoutMs = 30_000): Promise<void> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const before = `${world.relay.received()}:${world.proxy.log.length}:${world.version()}`;
    await world.sb.ctx.hooks.idle();
    await world.relay.flush();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      world.runtime().bot.pipeline.idle(),
      new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, until - performance.now())))),
    ]);
    clearTimeout(timer);
    await world.sb.ctx.hooks.idle();
    await world.relay.flush();
    await new Promise((resolve) => setImmediate(resolve));
    const after = `${world.relay.received()}:${world.proxy.log.length}:${world.version()}`;
    debug('settle round', before, after);
    if (before === after) return;
    if (performance.now() > until) throw new SettleTimeout(`no quiescence within ${timeoutMs} ms`);
  }
}

/** Markers of bot comments seen so far (a user copies one into a note). */
export function knownMarkers(world: World): string[] {
  const found = new Set<string>();
  for (const note of world.sb.ctx.db.data.notes)
    if (note.author_id === world.bot.id) for (const m of note.body.matchAll(MARKER)) found.add(m[0]);
  return [...found].sort();
}

export async function runCase(world: World, kase: Case): Promise<CaseResult> {
  const started = performance.now();
  const { sb, proxy, relay } = world;
  const db = sb.ctx.db;
  const pid = world.projectId;
  const n = ++caseCounter;
  const branch = `case-${n}`;
  const violations: Violation[] = [];
  const violate = (clause: Clause, message: string) => {
    if (!violations.some((v) => v.clause === clause && v.message === message))
      violations.push({ clause, message });
  };
  const firstRequest = proxy.log.length;
  const firstDelivery = relay.received();

  async function api(token: string, method: string, path: string, body?: unknown) {
    const res = await fetch(`${sb.apiUrl}${path}`, {
      method,
      headers: { 'private-token': token, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, json: json as Record<string, unknown> };
  }
  const admin = sb.adminToken;

  // ---- the case's items and their facts, version by version
  let mr: { id: number; iid: number; head: string } | undefined;
  let issue: { id: number; iid: number } | undefined;
  const history: { version: number; facts: MrFacts }[] = [];
  const merges: { version: number; request?: BotRequest }[] = [];

  function latestStatus(sha: string, name: string): string | undefined {
    let best: { id: number; status: string } | undefined;
    for (const s of db.data.statuses)
      if (s.project_id === pid && s.sha === sha && s.name === name && (!best || s.id > best.id)) best = s;
    return best?.status;
  }
  function factsNow(): MrFacts | undefined {
    if (!mr) return undefined;
    const rec = db.data.mergeRequests.find((m) => m.id === mr!.id);
    if (!rec) return undefined;
    return {
      state: rec.state,
      labels: [...rec.labels],
      head: mr.head,
      ci: latestStatus(mr.head, 'ci/test'),
      mwbs: rec.merge_when_build_succeeds,
    };
  }
  function recordFacts(): void {
    const facts = factsNow();
    if (!facts) return;
    const last = history.at(-1)?.facts;
    if (last && JSON.stringify(last) === JSON.stringify(facts)) return;
    history.push({ version: world.version(), facts });
    if (facts.state === 'merged' && last && last.state !== 'merged') {
      const request = [...proxy.log]
        .reverse()
        .find(
          (r) =>
            r.method === 'PUT' &&
            r.forwarded &&
            r.doneAt === undefined &&
            r.path === `/api/v3/projects/${pid}/merge_requests/${mr!.id}/merge`,
        );
      merges.push({ version: world.version(), ...(request ? { request } : {}) });
    }
  }
  const listener = () => recordFacts();
  world.onChange.push(listener);

  /** Facts effective at `version` and every later ones up to `end`. */
  function factsBetween(start: number, end: number): MrFacts[] {
    const out: MrFacts[] = [];
    let before: MrFacts | undefined;
    for (const h of history) {
      if (h.version <= start) before = h.facts;
      else if (h.version <= end) out.push(h.facts);
    }
    return before ? [before, ...out] : out;
  }
  /**
   * The bot's latest knowledge before `request`: the arrival of its last read of the MR (labels,
   * state, armed) and of its last read of the head's statuses. The merge handler re-reads the MR
   * right before the call; a fresh evaluation reads both. Each fact is judged from the bot's own
   * latest read of it: a change the driver made after that read is a race no bot can close (the
   * server takes no condition on labels or statuses), a change before it is one the bot had seen.
   */
  function lastReads(request: BotRequest, itemPath: string): { mr: number; statuses: number } {
    let mrRead: number | undefined;
    let statusRead: number | undefined;
    const statuses = `/api/v3/projects/${pid}/repository/commits/${mr!.head}/statuses`;
    for (let i = proxy.log.indexOf(request) - 1; i >= 0; i--) {
      const r = proxy.log[i]!;
      if (r.method !== 'GET') continue;
      if (mrRead === undefined && r.path === itemPath) mrRead = r.arrivedAt;
      if (statusRead === undefined && r.path === statuses) statusRead = r.arrivedAt;
      if (mrRead !== undefined && statusRead !== undefined) break;
    }
    return { mr: mrRead ?? 0, statuses: statusRead ?? 0 };
  }
  /** The bot's last requests on the MR before `request`, each with what the MR was at its arrival. */
  function trace(request: BotRequest, itemPath: string): string {
    const at = (version: number) => {
      const f = factsBetween(version, version)[0];
      return f ? `[${f.labels.join(',')}] ci=${f.ci ?? 'none'}${f.mwbs ? ' armed' : ''}` : '?';
    };
    const shaPath = (sha: string) => `/repository/commits/${sha}/statuses`;
    const index = proxy.log.indexOf(request);
    const lines = proxy.log
      .slice(Math.max(firstRequest, 0), index + 1)
      .filter((r) => r.path.startsWith(itemPath) || r.path.endsWith(shaPath(mr!.head)))
      .slice(-8)
      .map(
        (r) =>
          `#${r.seq} ${r.method} ${r.path.replace(`/api/v3/projects/${pid}`, '')}${r.fault ? ` (${r.fault})` : ''} seeing ${at(r.arrivedAt)}`,
      );
    return `bot requests before it: ${lines.join(' | ')}`;
  }
  // ---- (b) for note-driven label writes, judged at the arrival of the request
  const unjustifiedLabels: string[] = [];
  const previousArrive = proxy.onArrive;
  proxy.onArrive = (entry) => {
    previousArrive?.(entry);
    if (
      entry.method === 'GET' &&
      sneaks.length > 0 &&
      mr &&
      entry.path.endsWith(`/commits/${mr.head}/statuses`)
    ) {
      const next = sneaks[0]!;
      if (next.skip > 0) next.skip--;
      else sneakNow(sneaks.shift()!);
    }
    if (entry.method !== 'PUT') return;
    const match = /^\/api\/v3\/projects\/(\d+)\/(issues|merge_requests)\/(\d+)$/.exec(entry.path);
    if (!match || Number(match[1]) !== pid) return;
    const id = Number(match[3]);
    const isIssue = match[2] === 'issues';
    if (isIssue ? id !== issue?.id : id !== mr?.id) return;
    const raw = (entry.body as { labels?: unknown } | undefined)?.labels;
    const wanted = Array.isArray(raw) ? raw.map(String) : typeof raw === 'string' ? raw.split(',') : [];
    const rec = isIssue
      ? db.data.issues.find((i) => i.id === id)
      : db.data.mergeRequests.find((m) => m.id === id);
    if (!wanted.map((l) => l.trim()).includes('triaged') || rec?.labels.includes('triaged')) return;
    const type = isIssue ? 'Issue' : 'MergeRequest';
    const ok = db.data.notes.some(
      (note) =>
        note.noteable_type === type &&
        note.noteable_id === id &&
        note.author_id === world.maint.id &&
        !note.system &&
        /^\/triage/.test(note.body),
    );
    if (!ok)
      unjustifiedLabels.push(
        `bot request #${entry.seq} adds "triaged" to ${isIssue ? 'issue' : 'MR'} ${id}, but no real note "/triage..." by maint is on it`,
      );
  };

  // ---- races placed at the bot's reads (`sneak` steps), applied straight to the data
  const sneaks: { what: 'dnm' | 'unlabel' | 'ci-failed'; skip: number }[] = [];
  function sneakNow({ what, skip }: (typeof sneaks)[number]): void {
    const rec = db.data.mergeRequests.find((m) => m.id === mr!.id);
    if (!rec) return;
    const before = factsNow();
    if (what === 'dnm' && !rec.labels.includes('do-not-merge')) rec.labels.push('do-not-merge');
    if (what === 'unlabel') rec.labels = rec.labels.filter((l) => l !== 'automerge');
    if (what === 'ci-failed') {
      const latest = [...db.data.statuses]
        .reverse()
        .find((x) => x.project_id === pid && x.sha === mr!.head && x.name === 'ci/test');
      if (latest) db.data.statuses.push({ ...latest, id: db.nextId('statuses'), status: 'failed' });
    }
    rec.updated_at = db.now();
    db.changed();
    const after = factsNow();
    done.push({
      step: { k: 'sneak', what, skip },
      delivered: false,
      ...(before ? { before } : {}),
      ...(after ? { after } : {}),
    });
  }

  // ---- per-step records for the hook-level oracle
  interface Done {
    step: Step;
    delivered: boolean;
    before?: MrFacts;
    after?: MrFacts;
    note?: { id: number; on: 'mr' | 'issue' };
  }
  const done: Done[] = [];
  let openMrDelivered = false;
  let openIssueDelivered = false;

  const mrPath = () => `/projects/${pid}/merge_requests/${mr!.id}`;
  const issuePath = () => `/projects/${pid}/issues/${issue!.id}`;
  async function headOf(): Promise<string> {
    const res = await api(admin, 'GET', `/projects/${pid}/repository/branches/${branch}`);
    return (res.json.commit as { id: string }).id;
  }
  let commits = 0;
  let titles = 0;

  async function perform(step: Step): Promise<Performed> {
    switch (step.k) {
      case 'open-mr': {
        await api(admin, 'POST', `/projects/${pid}/repository/branches`, {
          branch_name: branch,
          ref: 'master',
        });
        await api(admin, 'POST', `/projects/${pid}/repository/files`, {
          file_path: `${branch}.txt`,
          branch_name: branch,
          content: `${branch}\n`,
          commit_message: `Add ${branch}`,
        });
        const head = await headOf();
        const created = await api(MAINT_TOKEN, 'POST', `/projects/${pid}/merge_requests`, {
          source_branch: branch,
          target_branch: 'master',
          title: `Change ${branch}`,
          labels: step.labels.join(','),
        });
        if (created.status >= 300) throw new Error(`MR not created: ${JSON.stringify(created.json)}`);
        mr = { id: Number(created.json.id), iid: Number(created.json.iid), head };
        recordFacts();
        if (step.ci)
          await api(admin, 'POST', `/projects/${pid}/statuses/${head}`, {
            state: step.ci,
            name: 'ci/test',
            ref: branch,
          });
        return {};
      }
      case 'open-issue': {
        const created = await api(MAINT_TOKEN, 'POST', `/projects/${pid}/issues`, {
          title: `Issue of ${branch}`,
        });
        issue = { id: Number(created.json.id), iid: Number(created.json.iid) };
        return {};
      }
      case 'label': {
        const rec = db.data.mergeRequests.find((m) => m.id === mr!.id)!;
        const labels = new Set(rec.labels);
        if (step.op === 'add') labels.add(step.label);
        else labels.delete(step.label);
        await api(MAINT_TOKEN, 'PUT', mrPath(), { labels: [...labels].join(',') });
        return {};
      }
      case 'status':
        await api(admin, 'POST', `/projects/${pid}/statuses/${mr!.head}`, {
          state: step.state,
          name: 'ci/test',
          ref: branch,
        });
        return {};
      case 'push': {
        const rec = db.data.mergeRequests.find((m) => m.id === mr!.id)!;
        if (!isOpen(rec.state)) return {}; // the branch may be gone with the merge
        commits++;
        const res = await api(admin, 'POST', `/projects/${pid}/repository/files`, {
          file_path: `${branch}-${commits}.txt`,
          branch_name: branch,
          content: `${commits}\n`,
          commit_message: `More ${commits}`,
        });
        if (res.status === 201) {
          mr!.head = await headOf();
          recordFacts();
        }
        return {};
      }
      case 'title':
        titles++;
        await api(MAINT_TOKEN, 'PUT', step.on === 'mr' ? mrPath() : issuePath(), {
          title: `${step.on === 'mr' ? 'Change' : 'Issue of'} ${branch}, take ${titles + 1}`,
        });
        return {};
      case 'note': {
        const markers = knownMarkers(world).filter((m) => m.includes('rule=thanks'));
        const body =
          step.text === 'triage'
            ? '/triage please'
            : step.text === 'plain'
              ? 'Looks fine to me.'
              : `Quoting the bot: ${markers[0] ?? '<!-- hookbot:rule=thanks:key=0000000000000000 -->'}`;
        const res = await api(
          step.by === 'maint' ? MAINT_TOKEN : ALICE_TOKEN,
          'POST',
          `${step.on === 'mr' ? mrPath() : issuePath()}/notes`,
          { body },
        );
        return { note: { id: Number(res.json.id), on: step.on } };
      }
      case 'forge': {
        const item =
          step.on === 'mr'
            ? { type: 'MergeRequest' as const, id: mr!.id }
            : { type: 'Issue' as const, id: issue!.id };
        let note: NoteRec;
        if (step.variant === 'impersonate') {
          const real = await api(ALICE_TOKEN, 'POST', `${step.on === 'mr' ? mrPath() : issuePath()}/notes`, {
            body: '/triage now',
          });
          const rec = db.data.notes.find((x) => x.id === Number(real.json.id))!;
          note = { ...rec, author_id: world.maint.id };
        } else {
          const now = db.now();
          note = {
            id: ++forgedIds,
            project_id: pid,
            body: '/triage',
            author_id: world.maint.id,
            noteable_type: item.type,
            noteable_id: item.id,
            commit_id: null,
            path: null,
            line: null,
            line_type: null,
            system: false,
            created_at: now,
            updated_at: now,
          };
        }
        return { forged: notePayload(sb.ctx, note, world.maint) };
      }
      case 'arm': {
        const facts = factsNow();
        if (!facts || !isOpen(facts.state) || facts.ci !== 'pending' || facts.mwbs) return {};
        await api(MAINT_TOKEN, 'PUT', `${mrPath()}/merge`, {
          merge_when_build_succeeds: true,
          sha: mr!.head,
        });
        return {};
      }
      case 'sneak': {
        sneaks.push({ what: step.what, skip: step.skip });
        return {};
      }
      case 'fault': {
        const where = FAULT_PATHS[step.target];
        proxy.fail({
          ...where,
          mode: step.mode === '503' ? 'reply-503' : 'forward-then-502',
          times: step.times,
        });
        return {};
      }
      case 'restart':
        await world.restart();
        return {};
      case 'settle':
        return {};
      case 'rogue': {
        const through = async (method: string, path: string, body: unknown) => {
          await fetch(`${proxy.url}/api/v3${path}`, {
            method,
            headers: { 'private-token': BOT_TOKEN, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
        };
        if (step.what === 'merge') await through('PUT', `${mrPath()}/merge`, { sha: mr!.head });
        else {
          const marker = knownMarkers(world).find((m) => m.includes('rule=thanks')) ?? '';
          await through('POST', `${mrPath()}/notes`, { body: `Thanks for the contribution\n\n${marker}` });
          await through('POST', `${mrPath()}/notes`, { body: `Thanks for the contribution\n\n${marker}` });
        }
        return {};
      }
      case 'tick':
        world.clock.advance(31 * 60_000);
        await world.runtime().sweeps.run('retries');
        await world.runtime().sweeps.run('merge_watch');
        return {};
    }
  }

  // ---- helpers of the oracle
  const mrKey = () => `merge_request:${pid}:${mr!.id}`;
  const issueKey = () => `issue:${pid}:${issue!.id}`;
  function outbox(): OutboxAction[] {
    const store = world.runtime().store;
    return [...store.dueActions(Number.MAX_SAFE_INTEGER), ...store.listParked()];
  }
  const opOf = (action: OutboxAction): string =>
    String(
      (action.call as { planned?: { call?: { op?: unknown } } } | undefined)?.planned?.call?.op ?? 'unknown',
    );
  const planned = (itemKey: string, rule: string) =>
    outbox().some((a) => a.itemKey === itemKey && a.rule === rule);
  function botComments(type: 'Issue' | 'MergeRequest', id: number): Map<string, number> {
    const byRule = new Map<string, number>();
    for (const note of db.data.notes) {
      if (note.author_id !== world.bot.id || note.noteable_type !== type || note.noteable_id !== id) continue;
      for (const m of note.body.matchAll(MARKER)) byRule.set(m[1]!, (byRule.get(m[1]!) ?? 0) + 1);
    }
    return byRule;
  }
  const itemLabels = (type: 'Issue' | 'MergeRequest', id: number) =>
    (type === 'Issue'
      ? db.data.issues.find((i) => i.id === id)?.labels
      : db.data.mergeRequests.find((m) => m.id === id)?.labels) ?? [];

  /** Relevant facts of a rule changed by the step, and the step's events reached the bot. */
  function lastChange(pick: (f: MrFacts) => unknown): Done | undefined {
    for (let i = done.length - 1; i >= 0; i--) {
      const d = done[i]!;
      if (!d.after) continue;
      if (!d.before || JSON.stringify(pick(d.before)) !== JSON.stringify(pick(d.after))) return d;
    }
    return undefined;
  }

  function checkComments(where: string): void {
    for (const [type, id, name] of [
      ['MergeRequest', mr!.id, `MR !${mr!.iid}`],
      ['Issue', issue!.id, `issue #${issue!.iid}`],
    ] as const)
      for (const [rule, count] of botComments(type, id))
        if (count > 1) violate('c', `${where}: ${count} bot comments of rule "${rule}" on ${name}`);
  }

  function hookLevelChecks(where: string): void {
    checkComments(where);
    const facts = factsNow()!;
    const mrComments = botComments('MergeRequest', mr!.id);
    const issueComments = botComments('Issue', issue!.id);
    if (openMrDelivered && !mrComments.get('thanks') && !planned(mrKey(), 'thanks'))
      violate('a-hook', `${where}: the MR's open was delivered, yet no "thanks" comment on it (nor planned)`);
    if (openIssueDelivered && !issueComments.get('thanks') && !planned(issueKey(), 'thanks'))
      violate(
        'a-hook',
        `${where}: the issue's open was delivered, yet no "thanks" comment on it (nor planned)`,
      );
    if (openIssueDelivered && !issueComments.get('title echo') && !planned(issueKey(), 'title echo'))
      violate(
        'a-hook',
        `${where}: the issue's open was delivered, yet no "title echo" comment (nor planned)`,
      );
    if (isOpen(facts.state)) {
      const head = lastChange((f) => [f.head, isOpen(f.state)]);
      if (
        head?.delivered &&
        latestStatus(facts.head, 'hookbot/policy') !== 'success' &&
        !planned(mrKey(), 'policy status')
      )
        violate(
          'a-hook',
          `${where}: step "${head.step.k}" set the head ${facts.head.slice(0, 8)} and was delivered, yet no hookbot/policy on it (nor planned)`,
        );
      const merge = lastChange((f) => qualifies(f));
      if (qualifies(facts) && merge?.delivered && !planned(mrKey(), 'automerge'))
        violate(
          'a-hook',
          `${where}: the MR qualifies for automerge since step "${merge.step.k}" (delivered), yet it is open and no merge is planned`,
        );
      const brake = lastChange((f) => blocked(f));
      if (
        blocked(facts) &&
        brake?.delivered &&
        brake.step.k !== 'arm' &&
        !planned(mrKey(), 'stop auto-merge when blocked')
      )
        violate(
          'a-hook',
          `${where}: armed with do-not-merge since step "${brake.step.k}" (delivered), yet not cancelled (nor planned)`,
        );
    }
    checkTriage('a-hook', where);
  }

  function checkTriage(clause: Clause, where: string): void {
    for (const d of done) {
      const s = d.step;
      if (s.k !== 'note' || s.by !== 'maint' || s.text !== 'triage' || !d.delivered || !d.note) continue;
      const type = d.note.on === 'mr' ? 'MergeRequest' : 'Issue';
      const id = d.note.on === 'mr' ? mr!.id : issue!.id;
      const key = d.note.on === 'mr' ? mrKey() : issueKey();
      if (
        !itemLabels(type, id).includes('triaged') &&
        !(clause === 'a-hook' && planned(key, 'triage command'))
      )
        violate(
          clause,
          `${where}: maint's "/triage" note on the ${d.note.on} was delivered, yet no "triaged" label`,
        );
    }
  }

  function finalChecks(): void {
    const where = 'at final quiescence';
    checkComments(where);
    const facts = factsNow()!;
    const mrComments = botComments('MergeRequest', mr!.id);
    const issueComments = botComments('Issue', issue!.id);
    if ((isOpen(facts.state) || openMrDelivered) && mrComments.get('thanks') !== 1)
      violate('a', `${where}: ${mrComments.get('thanks') ?? 0} "thanks" comments on the MR (expected 1)`);
    if (issueComments.get('thanks') !== 1)
      violate(
        'a',
        `${where}: ${issueComments.get('thanks') ?? 0} "thanks" comments on the issue (expected 1)`,
      );
    if (issueComments.get('title echo') !== 1)
      violate(
        'a',
        `${where}: ${issueComments.get('title echo') ?? 0} "title echo" comments on the issue (expected 1)`,
      );
    if (isOpen(facts.state) && latestStatus(facts.head, 'hookbot/policy') !== 'success')
      violate('a', `${where}: the open MR's head ${facts.head.slice(0, 8)} has no hookbot/policy success`);
    if (qualifies(facts))
      violate(
        'a',
        `${where}: the MR qualifies for automerge (${facts.labels.join(',')}, ci/test success) but is still open`,
      );
    if (blocked(facts))
      violate('a', `${where}: the MR is still armed (merge_when_build_succeeds) with do-not-merge`);
    checkTriage('a', where);

    // (b) merges and cancels against the facts the bot could have seen
    const itemPath = `/api/v3${mrPath()}`;
    for (const m of merges) {
      if (!m.request) continue; // merged by the server (merge when build succeeds, armed by maint)
      const read = lastReads(m.request, itemPath);
      const labels = factsBetween(read.mr, m.version);
      const ci = factsBetween(read.statuses, m.version);
      const labelsOk = labels.some(
        (f) => isOpen(f.state) && f.labels.includes('automerge') && !f.labels.includes('do-not-merge'),
      );
      const ciOk = ci.some((f) => isOpen(f.state) && f.ci === 'success');
      if (!labelsOk || !ciOk)
        violate(
          'b',
          `bot merge (request #${m.request.seq}) though ${
            labelsOk
              ? `ci/test was ${ci.map((f) => f.ci ?? 'none').join(' -> ')} from the bot's last read of the head's statuses on`
              : `the labels were ${labels.map((f) => `[${f.labels.join(',')}]`).join(' -> ')} from the bot's last read of the MR on`
          }; ${trace(m.request, itemPath)}`,
        );
    }
    for (const r of proxy.log.slice(firstRequest)) {
      if (r.method !== 'PUT' || r.path !== `${itemPath}/cancel_merge_when_build_succeeds` || !r.forwarded)
        continue;
      if (r.status === undefined || r.status >= 300) continue;
      const window = factsBetween(lastReads(r, itemPath).mr, r.arrivedAt);
      if (!window.some(blocked))
        violate(
          'b',
          `bot cancel (request #${r.seq}) while the MR was not armed with do-not-merge since the bot's last read`,
        );
    }
    for (const r of proxy.log.slice(firstRequest))
      if (r.method === 'PUT' && r.path === `${itemPath}/merge` && r.forwarded) {
        const body = r.body as { merge_when_build_succeeds?: unknown } | undefined;
        if (body?.merge_when_build_succeeds)
          violate('b', `bot armed merge_when_build_succeeds (request #${r.seq}): no rule plans it`);
      }
    for (const message of unjustifiedLabels) violate('b', message);

    // (d) and liveness: the outbox of the case's items
    for (const action of outbox()) {
      if (action.itemKey !== mrKey() && action.itemKey !== issueKey()) continue;
      const op = opOf(action);
      const state = action.parked ? `parked (${action.parked.reason})` : 'pending';
      if (op === 'mergeRequests.merge' && !qualifies(facts))
        violate(
          'd',
          `a merge of rule "${action.rule}" is still ${state} though the MR does not qualify (${facts.state}, [${facts.labels.join(',')}], ci/test=${facts.ci ?? 'none'})`,
        );
      else if (op === 'mergeRequests.cancelMergeWhenBuildSucceeds' && !blocked(facts))
        violate(
          'd',
          `a cancel of rule "${action.rule}" is still ${state} though the MR is not armed with do-not-merge`,
        );
      else if (op === 'mergeRequests.mergeWhenBuildSucceeds')
        violate('d', `an arming of rule "${action.rule}" is still ${state}`);
      else if (!action.parked)
        violate('liveness', `action ${op} of rule "${action.rule}" still pending after the final sweeps`);
    }
  }

  // ---- the run
  try {
    for (const step of kase.steps) {
      debug('step', JSON.stringify(step));
      if (step.k === 'settle') {
        relay.releaseHeld();
        await settle(world);
        if (mr && issue) hookLevelChecks(`at the settle after step ${done.length + 1}`);
        done.push({ step, delivered: false });
        continue;
      }
      const before = factsNow();
      relay.beginStep();
      const result = await perform(step);
      await sb.ctx.hooks.idle();
      const mode = 'd' in step ? step.d : 'normal';
      const caught = relay.endStep(mode);
      if (result.forged)
        relay.inject({ event: 'Note Hook', token: SECRET, body: JSON.stringify(result.forged) });
      recordFacts();
      const delivered = caught.length > 0 && mode !== 'drop';
      if (step.k === 'open-mr') openMrDelivered = delivered;
      if (step.k === 'open-issue') openIssueDelivered = delivered;
      const after = factsNow();
      done.push({
        step,
        delivered,
        ...(before ? { before } : {}),
        ...(after ? { after } : {}),
        ...(result.note ? { note: result.note } : {}),
      });
    }

    // hook quiescence: everything held delivered and worked off, no sweep yet (faults and races
    // still armed may hit this last work); then faults off and races dropped for the final sweeps
    relay.releaseHeld();
    await settle(world);
    hookLevelChecks('at hook quiescence (before any sweep)');
    proxy.clearFaults();
    sneaks.length = 0;

    // final quiescence: reconcile, retries with the clock advanced, merge watch, until nothing changes
    for (let round = 0; round < 6; round++) {
      debug('final round', round);
      const writes = proxy.log.filter((r) => r.method !== 'GET').length;
      await world.runtime().sweeps.run('reconcile');
      await settle(world);
      world.clock.advance(31 * 60_000);
      await world.runtime().sweeps.run('retries');
      await world.runtime().sweeps.run('merge_watch');
      await settle(world);
      const pending = outbox().filter(
        (a) => !a.parked && (a.itemKey === mrKey() || a.itemKey === issueKey()),
      );
      if (pending.length === 0 && proxy.log.filter((r) => r.method !== 'GET').length === writes) break;
    }
    finalChecks();
  } catch (error) {
    if (error instanceof SettleTimeout) violate('liveness', error.message);
    else throw error;
  } finally {
    world.onChange.splice(world.onChange.indexOf(listener), 1);
    proxy.onArrive = previousArrive;
    proxy.clearFaults();
    relay.releaseHeld();
    // Out of the next cases' way: closed in the data, no hook fired.
    const rec = mr && db.data.mergeRequests.find((m) => m.id === mr!.id);
    if (rec && isOpen(rec.state)) rec.state = 'closed';
    const irec = issue && db.data.issues.find((i) => i.id === issue!.id);
    if (irec) irec.state = 'closed';
  }
  return {
    violations,
    requests: proxy.log.length - firstRequest,
    deliveries: relay.received() - firstDelivery,
    ms: performance.now() - started,
  };
}
