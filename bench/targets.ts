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

/** The merge train benchmark's modes (bench/merge-train.bench.ts), merging at once first. */
const TRAIN_MODES = ['once', 'serial', 'train5', 'train10', 'batch4'] as const;

function mergeTrain(f: Figures): Summary {
  const ran = TRAIN_MODES.filter((m) => f[`${m}_time_t`] !== undefined);
  const missing = TRAIN_MODES.filter((m) => !ran.includes(m));
  const queues = ran.filter((m) => m !== 'once');
  const result = [
    `${n(f.merge_requests)} MRs, T = ${n(f.t_ms)} ms:`,
    ran
      .map(
        (m) =>
          `${m} ${f[`${m}_time_t`]} T, ${f[`${m}_landed`]} landed, ${f[`${m}_broken`]} broken, ${f[`${m}_ci_runs`]} CI runs`,
      )
      .join('; '),
    missing.length > 0 ? `(not run: ${missing.join(', ')})` : '',
  ]
    .filter(Boolean)
    .join(' ');
  const checks: string[] = [];
  checks.push(queues.length > 0 ? yes(queues.every((m) => Number(f[`${m}_broken`]) === 0)) : 'not measured');
  checks.push(
    ran.includes('train10') && ran.includes('serial')
      ? yes(Number(f.train10_time_t) <= Number(f.serial_time_t) / 4)
      : 'not measured',
  );
  checks.push(
    queues.length > 0
      ? yes(queues.every((m) => Number(f[`${m}_ci_runs`]) <= 2 * Number(f.merge_requests)))
      : 'not measured',
  );
  return {
    result,
    target: 'every queue mode 0 broken; depth 10 ≤ ¼ serial time; CI runs ≤ 2x MRs',
    met: checks.join('; '),
  };
}
