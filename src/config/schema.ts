/**
 * The configuration schema: the one place that says which keys exist, their defaults and what
 * they mean. `.describe()` texts become the comments of config.example.yml and the rows of
 * docs/configuration.md (scripts/gen-config-example.ts); `.meta()` adds what those need besides:
 * the environment variable that overrides a key (`env`), whether it is a secret (`secret`), an
 * example for keys without a default (`example`) and defaults that depend on where it runs
 * (`defaultNote`). Keys are snake_case, as written in YAML.
 */
import type { z } from 'zod';
import { DEFAULT_TRAIN_PREFIX } from '../git/index.ts';
import {
  branchFolder,
  cronLine,
  duration,
  flag,
  fraction,
  integer,
  mapping,
  nonEmptyText,
  oneOf,
  optionalText,
  optionalUrl,
  port,
  section,
  text,
  textList,
  urlPath,
} from './fields.ts';

/** What `.meta()` may say about a key, read back from the JSON Schema by the docs and the env overlay. */
export type ConfigKeyMeta = {
  /** The environment variable that overrides this key. */
  env?: string;
  /** Never printed, logged or shown; the example file leaves it empty. */
  secret?: boolean;
  /** For keys without a default: a value to show, commented out, in the example file. */
  example?: string;
  /** The default depends on where hookbot runs: the example leaves the key commented out. */
  defaultNote?: string;
  /** A file or folder: a relative path is resolved from the working directory at start (paths.ts). */
  fsPath?: boolean;
};

const meta = (m: ConfigKeyMeta): ConfigKeyMeta => m;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export const TOKEN_TYPES = ['private', 'oauth'] as const;

/** Listening on every interface is right in a container (the port is published) and wrong on a laptop. */
export const LOCAL_HOST = '127.0.0.1';
export const DOCKER_HOST = '0.0.0.0';

/** The periodic jobs of the scheduler (issue 6) and how often each runs unless configured. */
export const SWEEP_DEFAULTS = {
  rules: { every: '1h', what: 'Rules with a schedule: run over the open issues and merge requests.' },
  merge_watch: {
    every: '1m',
    what: 'Merge watch: re-read the head statuses of watched merge requests and merge when they pass.',
  },
  merge_queue: {
    every: '30s',
    what: 'Merge queue: bring the head of each queue up to its target, wait for its statuses, merge it (docs/merge-queue.md). Hooks about a queued merge request also run it at once; the timer finds status timeouts.',
  },
  retries: { every: '1m', what: 'Retry actions that failed with a retryable error (backoff per action).' },
  reconcile: {
    every: '15m',
    what: 'Re-evaluate issues and merge requests updated since the last run, in case a delivery was lost.',
  },
  hook_check: {
    every: '1h',
    what: "Check that each project still has hookbot's hook (and repair it when hooks.manage is true).",
  },
} as const;

export type SweepName = keyof typeof SWEEP_DEFAULTS;

/** When a sweep runs: exactly one of `every` and `cron`. */
export type SweepConfig =
  | { enabled: boolean; every: string; cron?: undefined }
  | { enabled: boolean; cron: string; every?: undefined };

function sweep(name: SweepName) {
  const { every, what } = SWEEP_DEFAULTS[name];
  return mapping({
    every: duration()
      .optional()
      .describe('How often it runs: a duration such as 30s, 5m, 1h or 1d. Set every or cron, not both.'),
    cron: cronLine()
      .optional()
      .describe("Instead of every (then remove every): a five-field cron line, in the machine's local time.")
      .meta(meta({ example: '0 3 * * *' })),
    enabled: flag().default(true).describe('false turns this sweep off.'),
  })
    .superRefine((value, ctx) => {
      if (value.every !== undefined && value.cron !== undefined)
        ctx.addIssue({ code: 'custom', message: 'set either every or cron, not both' });
    })
    .transform((value): SweepConfig =>
      value.cron !== undefined
        ? { enabled: value.enabled, cron: value.cron }
        : { enabled: value.enabled, every: value.every ?? every },
    )
    .prefault({ every })
    .describe(what);
}

export interface ConfigSchemaOptions {
  /**
   * Listen on every interface by default: in a container, against a server (load-config.ts). The
   * embedded sandbox listens on loopback only, so the bot on it does too, container or not.
   */
  inDocker?: boolean;
}

export function createConfigSchema(options: ConfigSchemaOptions = {}) {
  const defaultHost = options.inDocker ? DOCKER_HOST : LOCAL_HOST;
  return mapping({
    api: section({
      url: optionalUrl({ base: true })
        .describe(
          "The server's base URL, without /api/v3 (a trailing /api/v3 is dropped). Empty: run against the embedded sandbox.",
        )
        .meta(meta({ env: 'HOOKBOT_API_URL' })),
      token: optionalText()
        .describe("The bot user's token. Required when api.url is set.")
        .meta(meta({ env: 'HOOKBOT_API_TOKEN', secret: true })),
      token_file: optionalText()
        .describe(
          'A file holding the token (a trailing newline is dropped), e.g. a Docker or Kubernetes secret.',
        )
        .meta(meta({ env: 'HOOKBOT_API_TOKEN_FILE', fsPath: true })),
      token_type: oneOf(TOKEN_TYPES)
        .default('private')
        .describe('private sends the token as PRIVATE-TOKEN; oauth as Authorization: Bearer.'),
      timeout_ms: integer(1)
        .default(10_000)
        .describe('How long one API call may take before it is abandoned.'),
      concurrency: integer(1).default(8).describe('API calls in flight at once.'),
      push_note_lag_ms: integer(0)
        .default(10_000)
        .describe(
          "How long the server may take after a push to note it on the merge request (8.x writes `Added N commits` in its post-receive background job, a moment after the merge request's head moved). A merge train carries a fork's head only once a member's approval of it is this old, the merge request's notes read again then (docs/merge-queue.md#outsiders-and-forks).",
        ),
      retry: section({
        limit: integer(0)
          .default(3)
          .describe('Retries of a failed idempotent call (timeouts, 429 and 5xx answers).'),
        base_delay_ms: integer(0)
          .default(500)
          .describe('The first retry waits about this long; each further retry doubles it (with jitter).'),
      }).describe('Retries of API calls.'),
      bot_username: optionalText()
        .describe("The bot user's username. Empty: read from GET /user at start.")
        .meta(meta({ example: 'hookbot' })),
    }).describe('The server hookbot automates, through its REST API v3.'),

    git: section({
      username: optionalText()
        .describe(
          "The git user for HTTPS (the bot user's username). Empty: the bot's username (api.bot_username or GET /user).",
        )
        .meta(meta({ env: 'HOOKBOT_GIT_USERNAME', example: 'hookbot' })),
      password: optionalText()
        .describe(
          "The bot user's password or a personal access token, for git over HTTPS (servers of the era never take the API's private token for git; an OAuth token only fetches). Needed by the merge queue, unless ssh_key_file is set.",
        )
        .meta(meta({ env: 'HOOKBOT_GIT_PASSWORD', secret: true })),
      password_file: optionalText()
        .describe('A file holding the git password or token (a trailing newline is dropped).')
        .meta(meta({ env: 'HOOKBOT_GIT_PASSWORD_FILE', fsPath: true })),
      ssh_key_file: optionalText()
        .describe(
          "A private key file for git over SSH (the projects' ssh_url_to_repo) instead of HTTPS; its public key registered for the bot user (POST /user/keys). Keep it readable by hookbot only (mode 0600).",
        )
        .meta(meta({ env: 'HOOKBOT_GIT_SSH_KEY_FILE', fsPath: true })),
      ssh_known_hosts_file: optionalText()
        .describe(
          "A known_hosts file the server's SSH host key must be in (a line `[host]:port ssh-ed25519 AAAA…`, or `host ssh-…` for port 22). Empty: ssh's own known_hosts files of the user hookbot runs as. An unknown or changed host key is always refused, never trusted on first use.",
        )
        .meta(meta({ env: 'HOOKBOT_GIT_SSH_KNOWN_HOSTS_FILE', fsPath: true })),
      cache_dir: nonEmptyText()
        .default('data/git-cache')
        .describe(
          'Bare repositories the merge queue fetches into and makes merge commits in (no working tree), created 0700. A cache: safe to delete while hookbot is stopped.',
        )
        .meta(meta({ fsPath: true })),
      cache_max_repositories: integer(1)
        .default(20)
        .describe(
          'At most this many repositories in cache_dir (one per project the queue updated): making another deletes the least recently used.',
        ),
      gc_every_updates: integer(1)
        .default(20)
        .describe(
          'A cache repository is pruned (git gc, objects no ref has held for an hour dropped) after this many updates, between two updates.',
        ),
      timeout_ms: integer(1).default(120_000).describe('How long one git command may take.'),
      train_branch_prefix: branchFolder()
        .default(DEFAULT_TRAIN_PREFIX)
        .describe(
          "The folder of the merge trains' branches (docs/merge-queue.md#the-trains-branches): each car is pushed to `<prefix><target>/<queue>/<iid>`, and the bot deletes no branch outside it. Keep it a folder nobody else pushes to: a branch named like the folder itself (`hookbot/train`) stops every train of the project, said as the queue's trouble.",
        )
        .meta(meta({ env: 'HOOKBOT_GIT_TRAIN_BRANCH_PREFIX' })),
    }).describe(
      "Git access for the merge queue (docs/merge-queue.md), which brings a source branch up to its target's head with a push.",
    ),

    server: section({
      host: nonEmptyText()
        .default(defaultHost)
        .describe('The interface to listen on.')
        .meta(
          meta({
            env: 'HOOKBOT_HOST',
            defaultNote: `${LOCAL_HOST}; ${DOCKER_HOST} in a container when api.url is set (never on the embedded sandbox)`,
          }),
        ),
      port: port()
        .default(3000)
        .describe('The port to listen on (0: any free port).')
        .meta(meta({ env: 'HOOKBOT_PORT' })),
      hook_path: urlPath().default('/hooks').describe('The path the server delivers hooks to.'),
      body_limit_bytes: integer(1).default(1_048_576).describe('Larger deliveries are refused with 413.'),
      reading_limit_bytes: integer(1)
        .default(33_554_432)
        .describe(
          'Bytes of delivery bodies being read at once, all senders together; past it a delivery is answered 503 (with Retry-After) without being read. Never less than body_limit_bytes.',
        ),
      status_auth: section({
        username: optionalText()
          .describe('Empty: no authentication.')
          .meta(meta({ env: 'HOOKBOT_STATUS_USERNAME' })),
        password: optionalText()
          .describe('Required when username is set.')
          .meta(meta({ env: 'HOOKBOT_STATUS_PASSWORD', secret: true })),
        password_file: optionalText()
          .describe('A file holding the password (a trailing newline is dropped).')
          .meta(meta({ env: 'HOOKBOT_STATUS_PASSWORD_FILE', fsPath: true })),
      }).describe(
        'Basic authentication for the status page (/status), /metrics and /explain. Needed to listen beyond loopback, unless public_ops is true.',
      ),
      public_ops: flag()
        .default(false)
        .describe(
          'Listen beyond loopback (server.host other than 127.0.0.1, ::1 or localhost) without status_auth: the status page, /metrics and /explain are then open to whoever reaches the port. hookbot refuses to start that way unless this is true (e.g. a proxy or network policy guards the port).',
        )
        .meta(meta({ env: 'HOOKBOT_ALLOW_PUBLIC_OPS' })),
      allowed_hosts: textList(nonEmptyText()).describe(
        'Host names the status page, /metrics and /explain answer to, besides localhost and IP addresses (DNS rebinding protection). .example.com allows its subdomains too.',
      ),
      shutdown_timeout_ms: integer(0)
        .default(8_000)
        .describe(
          "On SIGTERM or SIGINT: how long to wait for running item runs, sweeps and state writes before they are abandoned (deliveries not processed stay in the inbox for the next start) and the process exits. Below Docker's 10 s stop timeout and Kubernetes' 30 s grace period.",
        ),
    }).describe(
      'The HTTP server that receives hook deliveries and serves /healthz, /readyz, /status, /metrics and /explain.',
    ),

    webhook: section({
      secret: optionalText()
        .describe(
          'The secret token configured on the hook; deliveries must send it in X-Gitlab-Token. Required when api.url is set, unless allow_open is true.',
        )
        .meta(meta({ env: 'HOOKBOT_WEBHOOK_SECRET', secret: true })),
      secret_file: optionalText()
        .describe('A file holding the secret (a trailing newline is dropped).')
        .meta(meta({ env: 'HOOKBOT_WEBHOOK_SECRET_FILE', fsPath: true })),
      allow_open: flag()
        .default(false)
        .describe(
          'Accept deliveries without a secret. Anyone who can reach the server can then trigger rules.',
        ),
      signature: section({
        secret: optionalText()
          .describe(
            'Also require an HMAC-SHA256 signature of the body made with this secret (behind a signing proxy).',
          )
          .meta(meta({ secret: true })),
        secret_file: optionalText()
          .describe('A file holding the signature secret (a trailing newline is dropped).')
          .meta(meta({ fsPath: true })),
        header: nonEmptyText()
          .default('X-Hookbot-Signature-256')
          .describe('The header that carries the signature.'),
      }).describe('Optional signature check, on top of the secret token.'),
    }).describe('How deliveries are authenticated.'),

    rules: section({
      dir: nonEmptyText()
        .default('rules')
        .describe('The rules folder: default.yml and <namespace>/<project>.yml.')
        .meta(meta({ env: 'HOOKBOT_RULES', fsPath: true })),
      watch: flag().default(true).describe('Reload rules when their files change.'),
      status_authors: textList(nonEmptyText()).describe(
        "Usernames whose commit statuses count (the CI's accounts); the bot's own count too, except those it posts for a rule of a project's .hookbot.yml (marked: their description starts with [.hookbot.yml]), which never count. Empty: a status counts whoever posted it, and any developer may post one (8.x lets developers post statuses), so a merge or queue rule that requires ci/test then merges on a developer's own word (docs/reliability.md#security).",
      ),
      repository: section({
        enabled: flag()
          .default(false)
          .describe(
            "Read each project's own .hookbot.yml (root of its default branch) and apply its rules after the central ones (docs/repository-rules.md).",
          )
          .meta(meta({ env: 'HOOKBOT_REPOSITORY_RULES' })),
        allow: textList(nonEmptyText()).describe(
          "Actions repository rules may use besides the defaults: the ones docs/rules.md#actions-in-repository-rules lists as needing the operator's permission (generated from the action registry). A move stays within the project's namespace.",
        ),
        queue: section({
          // At most the queue action's own limits (rules/actions/queue.ts MAX_DEPTH, MAX_BATCH).
          max_depth: integer(1, 20)
            .default(1)
            .describe(
              "The most depth (cars of a merge train tested at once) a repository rule's queue action may ask for; 1: a repository's queues are serial. A rule over it is refused with the file's other problems.",
            ),
          max_batch: integer(1, 10)
            .default(1)
            .describe(
              "The most batch (merge requests per car) a repository rule's queue action may ask for; 1: one merge request per car.",
            ),
        }).describe(
          'Limits on the merge queues repository rules feed (with queue in allow). A repository rule may not name a queue the central rules of its project feed (docs/repository-rules.md#queues).',
        ),
        plan_items: integer(1)
          .default(200)
          .describe(
            'The plan on a merge request that changes .hookbot.yml evaluates at most this many open items.',
          ),
        plan_api_calls: integer(1)
          .default(1000)
          .describe('And makes at most this many API calls; the comment says when the budget was reached.'),
        plan_per_author_hour: integer(1)
          .default(10)
          .describe(
            'Plans computed per merge request author in any hour; past it the comment and the status say when the next one will be, and it is computed then.',
          ),
        plan_per_merge_request_hour: integer(1)
          .default(4)
          .describe('Plans computed per merge request in any hour (the same answer past it).'),
      }).describe("Rules in each project's repository (.hookbot.yml), and what they may do."),
    }).describe('Where the rules are.'),

    state: section({
      path: nonEmptyText()
        .default('data/hookbot.json')
        .describe("hookbot's state file (back it up; keep it on a volume in Docker).")
        .meta(meta({ env: 'HOOKBOT_STATE', fsPath: true })),
      dedup_ttl_ms: integer(0)
        .default(86_400_000)
        .describe('How long a delivery is remembered, so that a redelivery is not processed twice.'),
      decisions: integer(1)
        .default(500)
        .describe(
          'Items whose decisions are kept for explain (the least recently decided go first); the latest of each, and its history below.',
        ),
      decision_history: integer(1)
        .default(20)
        .describe(
          "Evaluations kept per item for explain, the newest; besides them, its 10 newest decisions that acted, so the echoes of the bot's own changes do not push those out.",
        ),
      decision_bytes: integer(65_536)
        .default(8_388_608)
        .describe(
          "Bytes (of JSON) of every item's decision history together; past it the least recently decided items' history goes first (their latest decision stays). Each item's is bounded at 256 KiB too.",
        ),
      max_pending: integer(1)
        .default(10_000)
        .describe('Most deliveries accepted and not yet processed; past it new deliveries get 503.'),
      max_pending_bytes: integer(1)
        .default(33_554_432)
        .describe(
          "Most bytes of deliveries accepted and not yet processed (held in memory as text); past it new deliveries get 503. The default fits the Docker image's 256 MB heap.",
        ),
      database_url: optionalText()
        .describe(
          'A PostgreSQL connection string (postgres://user:password@host:5432/db): the state goes there instead of the state file, and several replicas may share it (docs/deployment.md). Empty: the state file.',
        )
        .meta(
          meta({ env: 'HOOKBOT_DATABASE_URL', secret: true, example: 'postgres://hookbot@db:5432/hookbot' }),
        ),
      database_schema: nonEmptyText()
        .default('public')
        .describe("The PostgreSQL schema holding hookbot's tables (created and migrated by hookbot)."),
      replica_id: optionalText()
        .describe(
          "This replica's name in leases, decisions and the status page (PostgreSQL only). Empty: <hostname>:<pid>.",
        )
        .meta(meta({ env: 'HOOKBOT_REPLICA_ID' })),
      lease_ms: integer(1000)
        .default(30_000)
        .describe(
          'PostgreSQL only: how long a replica that stopped renewing keeps its deliveries, item runs and sweeps before another replica takes them over.',
        ),
      database_connect_timeout_ms: integer(1)
        .default(5_000)
        .describe(
          'PostgreSQL only: how long opening a connection (or waiting for a free one of the pool) may take before the write fails.',
        ),
      database_statement_timeout_ms: integer(1)
        .default(10_000)
        .describe(
          "PostgreSQL only: the server's statement_timeout for hookbot's connections: a statement running longer is cancelled by the server.",
        ),
      database_query_timeout_ms: integer(1)
        .default(15_000)
        .describe(
          'PostgreSQL only: how long hookbot waits for the answer to one statement before it gives up and destroys the connection (a connection that died silently: a firewall or a partition dropping its packets). Keep it above database_statement_timeout_ms and below lease_ms.',
        ),
      database_idle_in_transaction_timeout_ms: integer(1)
        .default(15_000)
        .describe(
          "PostgreSQL only: the server's idle_in_transaction_session_timeout: a transaction whose client went silent is ended and its locks freed.",
        ),
      database_keepalive_ms: integer(1)
        .default(10_000)
        .describe(
          'PostgreSQL only: TCP keepalive on every connection, first probe after this long idle (finds dead idle connections, keeps firewalls from forgetting them).',
        ),
      database_accept_timeout_ms: integer(1)
        .default(5_000)
        .describe(
          'PostgreSQL only: how long a delivery may wait for its commit before it is answered 503 (the server waits 10 s, then retries). Also the readiness bound: a replica with a statement waiting longer is not ready.',
        ),
    }).describe('The state store: a file (one instance), or PostgreSQL (several replicas).'),

    pipeline: section({
      debounce_ms: integer(0)
        .default(250)
        .describe('Deliveries for the same issue or merge request within this window cause one evaluation.'),
      concurrency: integer(1).default(4).describe('Items evaluated at once.'),
      queue_limit: integer(1)
        .default(1000)
        .describe(
          'Items waiting in memory; beyond it deliveries stay in the state file until there is room.',
        ),
    }).describe('From accepted deliveries to rule evaluations.'),

    scheduler: section({
      sweeps: section({
        rules: sweep('rules'),
        merge_watch: sweep('merge_watch'),
        merge_queue: sweep('merge_queue'),
        retries: sweep('retries'),
        reconcile: sweep('reconcile'),
        hook_check: sweep('hook_check'),
      }).describe('The periodic sweeps and when each runs.'),
      budget_per_rule: integer(1)
        .default(30)
        .describe('Actions one scheduled rule may take in one project in one run.'),
      breaker: section({
        max_items: integer(1)
          .default(50)
          .describe('A scheduled rule that would touch more items than this in one run is paused.'),
        max_share: fraction()
          .default(0.5)
          .describe('Or more than this share of the items it looked at (0 to 1).'),
        echo_writes: integer(1)
          .default(10)
          .describe(
            "Writes one rule may make to one item, each caused by the bot's own change (allow_bot: true), within echo_window; one more pauses the rule in that project (docs/scheduler.md).",
          ),
        echo_window: duration().default('10m').describe('The sliding window of echo_writes.'),
      }).describe(
        'The circuit breaker: a paused rule waits for hookbot sweep --approve RULE or a config change.',
      ),
    }).describe('Periodic work: sweeps, merge watch, retries, reconciliation, hook check.'),

    hooks: section({
      manage: flag().default(false).describe("Create or repair hookbot's project hooks (needs hooks.url)."),
      url: optionalUrl()
        .describe('The URL the server should deliver hooks to. Required when manage is true.')
        .meta(meta({ example: 'https://hookbot.example.com/hooks' })),
      projects: textList(
        text().regex(/^[^/\s]+\/[^/\s]+$/, { error: 'must be namespace/project, e.g. acme/web' }),
      ).describe(
        'The projects hookbot serves, as namespace/project. Empty: every project the bot user can see.',
      ),
    }).describe("hookbot's own project hooks."),

    log: section({
      level: oneOf(LOG_LEVELS)
        .default('info')
        .describe('The least severe level written.')
        .meta(meta({ env: 'HOOKBOT_LOG_LEVEL' })),
      format: oneOf(LOG_FORMATS)
        .default('auto')
        .describe(
          'json: one JSON object per line. pretty: for people. auto: pretty on a terminal, json otherwise.',
        ),
    }).describe('Logs (secrets are always redacted).'),

    sandbox: section({
      port: port()
        .default(8929)
        .describe('The port of the embedded sandbox server.')
        .meta(meta({ env: 'HOOKBOT_SANDBOX_PORT' })),
      data: nonEmptyText()
        .default('data/sandbox.json')
        .describe("The sandbox's data file.")
        .meta(meta({ env: 'HOOKBOT_SANDBOX_DATA', fsPath: true })),
      ci: section({
        script: optionalText()
          .describe(
            'A shell command: when set, the embedded sandbox runs its simulated CI, which gives every pushed commit a status from this command run in a checkout of it (exit 0: success). Empty: no CI.',
          )
          .meta(meta({ env: 'HOOKBOT_SANDBOX_CI', example: 'test -f README.md' })),
        duration_ms: integer(0, 86_400_000)
          .default(1000)
          .describe('How long each simulated build takes at least (checkout and script included), in ms.')
          .meta(meta({ env: 'HOOKBOT_SANDBOX_CI_DURATION_MS' })),
        name: nonEmptyText()
          .default('ci/sandbox')
          .describe("The status name the simulated CI posts (what a queue's statuses name).")
          .meta(meta({ env: 'HOOKBOT_SANDBOX_CI_NAME' })),
        parallel: integer(1, 64)
          .default(4)
          .describe('Simulated builds at once; the others wait for one to end.')
          .meta(meta({ env: 'HOOKBOT_SANDBOX_CI_PARALLEL' })),
      }).describe(
        'The simulated CI of the embedded sandbox (docs/sandbox.md#simulated-ci), for trying the merge queue offline.',
      ),
    }).describe('The embedded sandbox, used by npm start when api.url is empty.'),
  });
}

export type ConfigSchema = ReturnType<typeof createConfigSchema>;
/** The configuration as the rest of hookbot reads it: every default filled in, '' read as not set. */
export type Config = z.output<ConfigSchema>;
