/**
 * Every Redis key name leasehold uses, built in one place. Per-job keys carry
 * the job id as a hash tag (`{<jobId>}`), so all of a job's keys live in one
 * Redis Cluster slot and a script can touch them together.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';

/** The default key prefix. */
export const DEFAULT_PREFIX = 'leasehold';

/** Key builders for one prefix; see {@link keys}. */
export interface Keys {
  /** The prefix every key starts with. */
  readonly prefix: string;
  /** String: the job's lease; its value names holder, since, tick and token. */
  lease(jobId: string): string;
  /** Hash: the job's claim state (`tick`, `fence`, `due`, `run`). */
  state(jobId: string): string;
  /** Hash: the job's cluster-wide counters and last outcome. */
  stats(jobId: string): string;
  /** Hash: the job's per-instance counters. */
  instanceStats(jobId: string): string;
  /** List: the job's recent runs. */
  runs(jobId: string): string;
  /** Hash: per stats writer, `<writer>.seq` its highest applied batch and `<writer>.renewedAt` when it last renewed the hash's expiry. */
  writers(jobId: string): string;
  /** Hash: operator settings that override job definitions. */
  readonly settings: string;
  /** Set: the ids of every job any node has registered. */
  readonly jobs: string;
  /** Sorted set: instance ids scored by last-seen time (ms). */
  readonly instances: string;
  /** Hash: instance id to the digest of the jobs it runs (which live nodes rank alike). */
  readonly nodes: string;
  /** Set with a TTL: the ids of the jobs of the nodes whose jobs have this digest. */
  registered(digest: string): string;
  /** Hash with a TTL: one instance's heartbeat. */
  instance(id: string): string;
  /** Pub/sub channel: control messages between nodes. */
  readonly control: string;
  /** String: set once by the first node's heartbeat; another value later means Redis lost its data. */
  readonly epoch: string;
  /** Hash: instance id to the figures of its loop and worker executors (JSON). */
  readonly executors: string;
  /** Set: the names of the queue executors that nodes have submitted tasks to. */
  readonly queues: string;
  /**
   * The base of a queue executor's BullMQ keys, `<prefix>:tasks:{<executor>}`: BullMQ's prefix
   * (`<prefix>:tasks`, {@link Keys.taskPrefix}) and the queue's name, a hash tag.
   */
  taskQueue(executor: string): string;
  /** The BullMQ prefix of the queue executors. */
  readonly taskPrefix: string;
}

/** One row of {@link KEY_TABLE}. */
export interface KeyDescription {
  /** The key's name, with `<prefix>`, `<jobId>` and `<id>` as placeholders. */
  readonly pattern: string;
  /** The Redis type stored under the key. */
  readonly type: 'string' | 'hash' | 'list' | 'set' | 'zset' | 'channel';
  /** What the key is for. */
  readonly purpose: string;
}

/**
 * Every key leasehold writes, for the README's key table (a test keeps the
 * two in step). `<prefix>` defaults to {@link DEFAULT_PREFIX}.
 */
export const KEY_TABLE: readonly KeyDescription[] = [
  { pattern: '<prefix>:{<jobId>}:lease', type: 'string', purpose: 'the installation lease: `<holder> since <time> tick <time> token <n>`, with a TTL; deleted by the release at its run\'s end, or by the node\'s record of a claim it gave up waiting for when Redis granted that claim (no run holds it)' },
  { pattern: '<prefix>:{<jobId>}:state', type: 'hash', purpose: 'claim state: `tick` last claimed tick (ms), `fence` fencing counter, `due` next fixedDelay start (ms), `manual`/`manualAt` the last run-now request and its time, `run` the running marker of the last claim won (`<token> <tick> <startedAt> <manual> <holder>`, `startedAt` the claim\'s time or its tick when later, cleared when its run is released or recorded; a claim that finds it set with the lease expired records that run `lost`), `lost` the last 16 runs recorded that way, `<token>:<tick>` space-separated: a node that records one of them later (or a claim of that tick whose answer it never got) is refused, one record per run; `gaveUp.<instanceId>` a tick whose claim that node gave up waiting for and recorded failed: the claim, should Redis reach it only then, is answered done (removed by that node\'s next claim won); `failed` the ticks after the last claimed one that the record of a claim with no answer counted failed, space-separated, until the next claim won, which does not count them missed (such a tick counts once, however many nodes tried it)' },
  { pattern: '<prefix>:{<jobId>}:stats', type: 'hash', purpose: 'cluster-wide counters and last outcome of the job' },
  { pattern: '<prefix>:{<jobId>}:instances', type: 'hash', purpose: 'per-instance counters of the job, fields `<instanceId>.<field>`' },
  { pattern: '<prefix>:{<jobId>}:runs', type: 'list', purpose: 'the job\'s most recent runs (50 unless `LEASEHOLD_RECENT_RUNS` says otherwise), newest first: JSON `{outcome, instance, scheduledAt, startedAt, durationMs, error, fencingToken, manual, attempt}` (for a `lost` run, pushed by the claim that found it: `startedAt` is its claim\'s time, or its tick when the claim came ahead of it, and `durationMs` the time until it was found)' },
  { pattern: '<prefix>:{<jobId>}:writers', type: 'hash', purpose: 'per stats writer `<instanceId>#<nonce>`: `<writer>.seq` its highest applied batch, so a retried batch counts once, and `<writer>.renewedAt` when it last renewed the hash\'s expiry (Redis time, ms; every 100 minutes or so); a writer not heard of for 7 days is dropped, and the hash expires 7 days after the last batch' },
  { pattern: '<prefix>:settings', type: 'hash', purpose: 'operator overrides: `<jobId>.paused`, `<jobId>.cron`, ...' },
  { pattern: '<prefix>:jobs', type: 'set', purpose: 'ids of every registered job (added at start, when a job is added, after a reconnection, and every minute by each node)' },
  { pattern: '<prefix>:instances', type: 'zset', purpose: 'instance ids scored by last seen (ms); members unseen for 60 s are dropped' },
  { pattern: '<prefix>:nodes', type: 'hash', purpose: 'instance id -> digest of the jobs it runs: the live nodes with the same digest rank each installation tick\'s claimers alike; a stopped node removes its field' },
  { pattern: '<prefix>:registered:<digest>', type: 'set', purpose: 'the ids of the jobs of the nodes whose jobs have this digest (the value of their field in `<prefix>:nodes`): a job in no live node\'s set is `orphaned`; written with the job ids, expires 3 minutes after the last write' },
  { pattern: '<prefix>:instance:<id>', type: 'hash', purpose: 'one instance: `id`, `host`, `pid`, `version`, `startedAt`, `lastSeenAt`, `jobs`; TTL 15 s, refreshed every 5 s, so it expires when the node dies' },
  { pattern: '<prefix>:control', type: 'channel', purpose: 'pub/sub channel: `{"type":"settings"}` after a settings change, `{"type":"run","jobId":...}` to run a job now (an instance job on every node, an installation job once), `{"type":"cancel","jobId":...}` to cancel the job\'s run in progress wherever it runs, `{"type":"left","instanceId":...}` from a node that stopped and `{"type":"joined","instanceId":...}` from a node that wrote its first heartbeat, so the others rank the ticks over the live nodes at once' },
  { pattern: '<prefix>:epoch', type: 'string', purpose: 'set once, by the first heartbeat to find none (`<time> <instanceId> <random>`); each node reads it at every heartbeat, and one that reads another value than before logs at error that Redis lost its data (restarted without persistence, failed over to a replica without it, or flushed): fencing tokens start again from 1, settings and counters are gone' },
  { pattern: '<prefix>:executors', type: 'hash', purpose: 'instance id -> JSON `{at, executors: [...]}`: the figures of its loop and worker executors, written every 5 s once it has used one; rows older than 15 s are ignored and removed, and a stopped node removes its own' },
  { pattern: '<prefix>:queues', type: 'set', purpose: 'the names of the queue executors that nodes have submitted tasks to (each node adds its executor\'s name at its first submit), so that a queue holding tasks shows in the executors view while no live node consumes it' },
  { pattern: '<prefix>:tasks:{<executor>}:*', type: 'hash', purpose: 'a queue executor\'s BullMQ queue (waiting, active, delayed, completed and failed tasks, their data and results), laid out by BullMQ; the hash tag keeps one queue in one Redis Cluster slot' },
];

const FORBIDDEN = /[{}\s]/;

function checkPart(what: string, value: string): void {
  if (typeof value !== 'string' || value.length === 0 || FORBIDDEN.test(value)) {
    throw new LeaseholdError(
      ErrorCodes.invalidConfig,
      `${what} ${JSON.stringify(value)} is not usable in a Redis key: it must be non-empty, without braces or whitespace`,
    );
  }
}

/**
 * Key builders for `prefix`. Throws `invalidConfig` when the prefix, or a
 * job or instance id given later, is empty or holds braces or whitespace
 * (braces would break the hash tag).
 */
export function keys(prefix: string = DEFAULT_PREFIX): Keys {
  checkPart('key prefix', prefix);
  const job = (jobId: string, suffix: string): string => {
    checkPart('job id', jobId);
    return `${prefix}:{${jobId}}:${suffix}`;
  };
  return {
    prefix,
    lease: (jobId) => job(jobId, 'lease'),
    state: (jobId) => job(jobId, 'state'),
    stats: (jobId) => job(jobId, 'stats'),
    instanceStats: (jobId) => job(jobId, 'instances'),
    runs: (jobId) => job(jobId, 'runs'),
    writers: (jobId) => job(jobId, 'writers'),
    settings: `${prefix}:settings`,
    jobs: `${prefix}:jobs`,
    instances: `${prefix}:instances`,
    nodes: `${prefix}:nodes`,
    registered: (digest) => {
      checkPart('digest', digest);
      return `${prefix}:registered:${digest}`;
    },
    instance: (id) => {
      checkPart('instance id', id);
      return `${prefix}:instance:${id}`;
    },
    control: `${prefix}:control`,
    epoch: `${prefix}:epoch`,
    executors: `${prefix}:executors`,
    queues: `${prefix}:queues`,
    taskQueue: (executor) => {
      checkPart('executor name', executor);
      return `${prefix}:tasks:{${executor}}`;
    },
    taskPrefix: `${prefix}:tasks`,
  };
}

/** The README's key table, rendered from {@link KEY_TABLE}. */
export function renderKeyTable(): string {
  const rows = KEY_TABLE.map((k) => `| \`${k.pattern}\` | ${k.type} | ${k.purpose} |`);
  return ['| key | type | what it holds |', '|---|---|---|', ...rows].join('\n');
}
