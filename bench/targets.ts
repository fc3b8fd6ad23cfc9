/**
 * Each benchmark's headline for the README: its result in a few words, the target it is held to
 * (from the issue that set it), and whether the last run met it. A benchmark without a target says
 * so; a Probot run whose load generator was the limit says that instead of met or not.
 */
type Figures = Record<string, number | string>;

export interface Summary {
  result: string;
  target: string;
  met: string;
}

const yes = (ok: boolean) => (ok ? 'yes' : '**no**');
const n = (value: number | string | undefined) =>
  typeof value === 'number' ? value.toLocaleString('en-US') : String(value ?? '?');

export function summarise(name: string, f: Figures): Summary {
  switch (name) {
    case 'receiver':
      return {
        result: `${f.ratio}x bare node:http; ack p99 ${f.p99_ms} ms at 64 connections (least durable intake: ${f.durable_floor_p99_ms} ms); ${n(f.cpu_us_per_request)} µs CPU/delivery (node:http alone ${n(f.floor_cpu_us_per_request)}, least durable intake ${n(f.durable_floor_cpu_us_per_request)})`,
        target: '≥ 0.7x bare; p99 < 10 ms, durable before the 202',
        met: `${yes(Number(f.ratio) >= 0.7)}; ${yes(Number(f.p99_ms) < 10)}`,
      };
    case 'probot':
      return {
        result: `${f.ratio}x Probot 14's requests/s (least durable intake ${f.durable_floor_ratio}x, do-nothing server ${f.ceiling_ratio}x)`,
        target: '≥ 2x Probot',
        met:
          f.load_generator_bound === 'yes'
            ? 'not measurable: load-generator bound'
            : Number(f.ratio) < 2 && Number(f.durable_floor_ratio) < 2
              ? `**no**: out of reach here (the least durable intake: ${f.durable_floor_ratio}x)`
              : yes(Number(f.ratio) >= 2),
      };
    case 'rules':
      return {
        result: `${f.median_ms} ms median per evaluation of ${n(f.rules)} rules`,
        target: '< 1 ms',
        met: yes(Number(f.median_ms) < 1),
      };
    case 'memory':
      return {
        result: `${f.rss_mb_100k} MB RSS after 100,000 deliveries; state size ratio ${f.ratio}`,
        target: '< 150 MB; state bounded',
        met: yes(Number(f.rss_mb_100k) < 150 && Number(f.ratio) <= 1.1),
      };
    case 'postgres':
      return {
        result: `${n(f.rps)} acks/s on PostgreSQL, ${f.ratio}x the state file's (${n(f.file_rps)}); p99 ${f.p99_ms} ms (file ${f.file_p99_ms} ms); two replicas: hook to action p50 ${f.replicas_hook_to_action_p50_ms} ms, p99 ${f.replicas_hook_to_action_p99_ms} ms`,
        target: "≥ 0.5x the state file's requests/s at 64 connections",
        met: yes(Number(f.ratio) >= 0.5),
      };
    case 'hook-to-action':
      return {
        result: `delivery to API call p50 ${f.p50_ms} ms, p99 ${f.p99_ms} ms`,
        target: 'none (reported)',
        met: '',
      };
    case 'state':
      return {
        result: `${f.ratio}x the writes/s of one fsync per mutation (group commit)`,
        target: 'none (reported)',
        met: '',
      };
    case 'sweep':
      return {
        result: `${f.ratio}x the minimum API calls (${n(f.calls)} for ${n(f.open_mrs)} open MRs)`,
        target: 'none (reported)',
        met: '',
      };
    case 'merge-queue':
      return {
        result: `20 MRs green at once: at once ${f.once_20_broken} broken commits on the target, ${f.once_20_merged} merged in ${n(f.once_20_total_ms)} ms; queue ${f.queue_20_broken} broken, ${f.queue_20_merged} merged in ${n(f.queue_20_total_ms)} ms (p50 ${n(f.queue_20_p50_ms)} ms, ${f.queue_20_calls_per_merge} API calls/merge); a silent status holds it ${n(f.stuck_hold_ms)} ms (timeout ${n(f.stuck_timeout_ms)} ms)`,
        target: 'queue: 0 broken commits; at once: > 0',
        met: yes(Number(f.queue_20_broken) === 0 && Number(f.once_20_broken) > 0),
      };
    case 'merge-train':
      return mergeTrain(f);
    case 'sandbox': {
      const writes = ['issue', 'note', 'label', 'status', 'file', 'branch', 'merge'];
      const figure = (key: string) => Number(f[key]);
      const worst = writes.reduce((a, b) => (figure(`${b}_c16_p99_ms`) > figure(`${a}_c16_p99_ms`) ? b : a));
      const p99 = figure(`${worst}_c16_p99_ms`);
      const apiMax = Math.max(
        ...writes.flatMap((w) => [figure(`${w}_c1_max_ms`), figure(`${w}_c16_max_ms`)]),
      );
      return {
        result: `API writes at 16 callers: p99 at most ${p99} ms (${worst}), slowest ${n(apiMax)} ms; git push of 21 commits at 16: p99 ${n(f.push_21_c16_p99_ms)} ms (git alone, no server: ${n(f.git_alone_push_21_c16_p99_ms)} ms), slowest ${n(f.max_ms)} ms; start-up ${f.startup_in_process_ms} ms (\`hookbot sandbox\` ${n(f.startup_cli_ms)} ms)`,
        target: 'API writes p99 < 50 ms at 16 callers; no answer past 2 s; start-up < 1 s',
        met: `${yes(p99 < 50)}; API ${yes(apiMax < 2000)}, pushes ${yes(figure('max_ms') < 2000)}; ${yes(figure('startup_in_process_ms') < 1000)}`,
      };
    }
    default:
      return { result: f.ratio === undefined ? '' : `${f.ratio}x baseline`, target: 'none', met: '' };
  }
}

/** The merge train benchmark's modes on its semantic workload (bench/merge-train.bench.ts), merging at once first. */
const TRAIN_MODES = ['once', 'serial', 'train5', 'train10', 'auto', 'batch4', 'train2batch4'] as const;
/** The linear trains, held to the bound a linear train can reach (issue 38). */
const LINEAR = ['train5', 'train10', 'auto'] as const;

function mergeTrain(f: Figures): Summary {
  const ran = TRAIN_MODES.filter((m) => f[`${m}_time_t`] !== undefined);
  const missing = TRAIN_MODES.filter((m) => !ran.includes(m));
  const queues = ran.filter((m) => m !== 'once');
  const has = (key: string) => f[key] !== undefined;
  const num = (key: string) => Number(f[key]);
  const flaky = ['serial', ...LINEAR].filter((m) => has(`flaky_${m}_good_removed`));
  const push = ['serial', ...LINEAR].filter((m) => has(`push_${m}_stale_runs`));
  const result = [
    `${n(f.merge_requests)} MRs, T = ${n(f.t_ms)} ms:`,
    ran
      .map(
        (m) =>
          `${m} ${f[`${m}_time_t`]} T${has(`${m}_rounds_ratio`) ? ` (${f[`${m}_rounds_ratio`]}x ideal)` : ''}, ${f[`${m}_landed`]} landed, ${f[`${m}_broken`]} broken, ${f[`${m}_ci_runs`]} CI runs`,
      )
      .join('; '),
    missing.length > 0 ? `(not run: ${missing.join(', ')})` : '',
    flaky.length > 0
      ? `flaky CI: good MRs removed ${flaky.map((m) => `${m} ${f[`flaky_${m}_good_removed`]}`).join(', ')};`
      : '',
    push.length > 0
      ? `push mid-train: stale CI runs ${push.map((m) => `${m} ${f[`push_${m}_stale_runs`]}`).join(', ')};`
      : '',
    has('hook_round_added_t')
      ? `hook-driven round (separate processes): +${f.hook_round_added_t} T (step lag p50 ${n(f.hook_round_lag_p50_ms)} ms, max ${n(f.hook_round_lag_max_ms)} ms)`
      : '',
  ]
    .filter(Boolean)
    .join(' ');
  const checks: string[] = [];
  checks.push(queues.length > 0 ? yes(queues.every((m) => num(`${m}_broken`) === 0)) : 'not measured');
  checks.push(
    ran.includes('train10') && ran.includes('serial')
      ? yes(num('train10_time_t') <= num('serial_time_t') / 4)
      : 'not measured',
  );
  checks.push(
    queues.length > 0
      ? yes(queues.every((m) => num(`${m}_ci_runs`) <= 2 * num('merge_requests')))
      : 'not measured',
  );
  const trains = LINEAR.filter((m) => has(`${m}_rounds_ratio`));
  checks.push(
    trains.length > 0
      ? yes(Math.min(...trains.map((m) => num(`${m}_rounds_ratio`))) <= 1.15)
      : 'not measured',
  );
  const bounded = LINEAR.filter((m) => has(`${m}_ci_ratio`));
  checks.push(bounded.length > 0 ? yes(bounded.every((m) => num(`${m}_ci_ratio`) <= 1.1)) : 'not measured');
  const flakyTrains = flaky.filter((m) => m !== 'serial');
  checks.push(
    flaky.includes('serial') && flakyTrains.length > 0
      ? yes(
          Math.min(...flakyTrains.map((m) => num(`flaky_${m}_good_removed`))) <=
            num('flaky_serial_good_removed') / 4,
        )
      : 'not measured',
  );
  checks.push(push.length > 0 ? yes(push.every((m) => num(`push_${m}_stale_runs`) === 0)) : 'not measured');
  checks.push(has('hook_round_added_t') ? yes(num('hook_round_added_t') < 0.1) : 'not measured');
  return {
    result,
    target:
      'every queue mode 0 broken; depth 10 ≤ ¼ serial time; CI runs ≤ 2x MRs; best train ≤ 1.15x ideal rounds; train CI runs ≤ 1.1x ideal; flaky CI: a train removes ≤ ¼ the good MRs serial does; 0 stale CI runs after a push mid-train; a hook-driven round adds < 0.1 T',
    met: checks.join('; '),
  };
}
