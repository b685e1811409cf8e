/**
 * Reads the cluster's status straight from Redis in pipelined round trips: first the job set,
 * the settings hash, the instance set, the nodes' digests and Redis time; then every job's
 * stats, per-instance rows (instance jobs) and lease (installation jobs), {@link READ_CHUNK} jobs a
 * round trip, the first with every instance's heartbeat and the job sets of the digests. Each
 * chunk's jobs are built as it is answered, so a read holds one chunk's raw hashes at a time.
 * A node's reads keep what they found ({@link KnownJobs}): a job read before has only its stats'
 * version read, and its stats again only when that moved (one more round trip for the chunk).
 * On a Redis Cluster each round trip is one pipeline per slot, sent together.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { JOB_ID_PATTERN } from '../schedule/job.js';
import { pipelined, type PipelineReply, type PipelinedCommand } from '../redis/pipeline.js';
import type { RecentRun } from './batch.js';
import { outcome } from './fields.js';
import { instanceStatus, interning, jobSettings, jobStatus, knownJob, rejudge, statsVersion, type JobNow, type KnownJob, type ModelContext } from './build.js';
import { digestsOf, registeredFrom, type DigestSet, type LiveNode } from './registered.js';
import { DEFAULT_FAILING_STREAK, type ClusterStatus, type InstanceStatus, type JobDetail, type JobStatus, type StatusProblem } from './model.js';
import { corruptSettings, parseSettings } from './settings.js';

/** Options of the readers. */
export interface ReadOptions {
  /** Streak length from which a job is degraded (default {@link DEFAULT_FAILING_STREAK}). */
  readonly failingStreak?: number;
  /**
   * Scopes seen by an earlier read (kept up to date by this one): a job known to be an
   * installation job is read without per-instance rows, an instance job without a lease.
   */
  readonly scopes?: Map<string, string>;
  /** What the node's earlier reads found (kept up to date by this one); see {@link KnownJobs}. */
  readonly known?: KnownJobs;
}

/**
 * How many jobs' reads go in one pipeline. Each chunk's replies are parsed and its jobs built
 * in one go, holding the node's event loop: at 250 jobs that is a few ms, so requests and ticks
 * are served between the chunks (1,000 jobs a chunk held it for 20 to 60 ms in S4).
 */
const READ_CHUNK = 250;

/**
 * A known job is read whole at one read in this many (the others read its version alone),
 * each read taking its turn for another tenth of the jobs.
 */
const WHOLE_EVERY = 10;

/**
 * What a node keeps of every job between its reads of the whole status ({@link readCluster}):
 * a job whose stats kept their version since is judged again from what was kept, and only its
 * version, lease and settings are read. A read of a thousand jobs of which a few ran reads the
 * stats of those few.
 */
export class KnownJobs {
  private jobs = new Map<string, KnownJob>();
  private rounds = 0;

  /** The job as the last read left it. */
  get(id: string): KnownJob | undefined {
    return this.jobs.get(id);
  }

  /** A read begins: its number. */
  nextRound(): number {
    return this.rounds++;
  }

  /** A read ended: what it found replaces what was kept (jobs it did not find are forgotten). */
  keep(jobs: Map<string, KnownJob>): void {
    this.jobs = jobs;
  }
}

/** Commands of one read, each queued with the key that decides its slot. */
class Reads {
  readonly commands: PipelinedCommand[] = [];

  add(key: string | undefined, queue: PipelinedCommand['queue']): this {
    this.commands.push({ key, queue });
    return this;
  }
}

/** The reply of a read of a key of the wrong type (an operator's mistake): it reads as empty. */
const WRONG_TYPE: unique symbol = Symbol('wrong type');

async function exec(redis: RedisClient, reads: Reads): Promise<unknown[]> {
  const replies: PipelineReply[] = await pipelined(redis, reads.commands);
  return replies.map(([err, value]) => {
    if (!err) return value;
    // A key of the wrong type (an operator's mistake) reads as empty; anything else is Redis failing.
    if (err.name === 'ReplyError' && /^WRONGTYPE/.test(err.message)) return WRONG_TYPE;
    throw new LeaseholdError(ErrorCodes.redisError, `reading the status from Redis failed: ${err.message}`, { cause: err });
  });
}

function hash(v: unknown): Record<string, string> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {};
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** A job's turn among the reads that read it whole: a small hash of its id. */
function turnOf(id: string): number {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) % WHOLE_EVERY;
  return h;
}

/** An HMGET's reply: its values, undefined where a field is absent. */
function fieldsOf(v: unknown): Array<string | undefined> {
  return Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : undefined)) : [];
}

function redisTime(v: unknown): number {
  const [s, us] = strings(v);
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

const INSTANCE_ID = /^[^{}\s]{1,128}$/;

function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

interface Base {
  nowMs: number;
  jobIds: string[];
  settings: Record<string, string>;
  members: string[];
  /** `<prefix>:nodes`: instance id to the digest of its jobs. */
  digests: Record<string, string>;
  /** The settings hash holds a value of another type. */
  settingsCorrupt: boolean;
}

async function readBase(redis: RedisClient, keys: Keys, jobId?: string): Promise<Base> {
  const r = new Reads().add(undefined, (p) => p.time()).add(keys.instances, (p) => p.zrange(keys.instances, 0, -1));
  if (jobId === undefined) r.add(keys.jobs, (p) => p.smembers(keys.jobs));
  else r.add(keys.jobs, (p) => p.sismember(keys.jobs, jobId));
  r.add(keys.settings, (p) => p.hgetall(keys.settings)).add(keys.nodes, (p) => p.hgetall(keys.nodes));
  const [time, members, jobs, settings, digests] = await exec(redis, r);
  // An id defineJob refuses (an operator's typo in the job set) is left out.
  const jobIds = jobId === undefined ? strings(jobs).filter((id) => JOB_ID_PATTERN.test(id)).sort(byId) : jobs === 1 ? [jobId] : [];
  return { nowMs: redisTime(time), members: strings(members).filter((id) => INSTANCE_ID.test(id)), jobIds, settings: hash(settings), digests: hash(digests), settingsCorrupt: settings === WRONG_TYPE };
}

/** The live nodes (heartbeat replies in `members` order) with their digests and job counts. */
function liveNodes(base: Base, heartbeats: unknown[]): LiveNode[] {
  return base.members.flatMap((id, i) => {
    const h = hash(heartbeats[i]);
    return Object.keys(h).length === 0 ? [] : [{ digest: base.digests[id], jobs: h['jobs'] }];
  });
}

function liveInstances(members: string[], replies: unknown[]): { live: Set<string>; instances: InstanceStatus[] } {
  const live = new Set<string>();
  const instances: InstanceStatus[] = [];
  members.forEach((id, i) => {
    const h = hash(replies[i]);
    if (Object.keys(h).length === 0) return; // the heartbeat expired: the node is gone
    live.add(id);
    instances.push(instanceStatus(id, h));
  });
  instances.sort((a, b) => byId(a.id, b.id));
  return { live, instances };
}

/**
 * Queues the reads of one job: its stats whole or their version alone (or neither), its rows, its
 * lease.
 */
function queueJob(r: Reads, keys: Keys, id: string, rows: boolean, lease: boolean, versionOnly: boolean, stats = true): void {
  const key = keys.stats(id);
  if (stats) r.add(key, (p) => (versionOnly ? p.hmget(key, 'version', 'createdAt') : p.hgetall(key)));
  if (rows) r.add(key, (p) => p.hgetall(keys.instanceStats(id)));
  if (lease) r.add(key, (p) => p.get(keys.lease(id)).pttl(keys.lease(id)));
}

/** The settings of the jobs the settings hash does not name (most): one read-only object. */
const NO_SETTINGS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** Every job and every live instance, as `GET /manage/jobs` returns them. */
export async function readCluster(redis: RedisClient, keys: Keys, opts: ReadOptions = {}): Promise<ClusterStatus> {
  const base = await readBase(redis, keys);
  // What is read per job: stats always; per-instance rows unless it is known to be an
  // installation job; the lease unless it is known to be an instance job.
  const plan = base.jobIds.map((id) => {
    const scope = opts.scopes?.get(id);
    return { id, rows: scope !== 'installation', lease: scope !== 'instance' };
  });
  // The job sets of the nodes' digests (few: the nodes that run the same jobs share one).
  const digests = digestsOf(base.members, base.digests);
  // Jobs with a field in the settings hash (most have none: they share one empty object).
  const withSettings = parseSettings(base.settings);
  // In pipelines of READ_CHUNK jobs, one after another: each command's timeout then bounds
  // one chunk's wait, not the whole installation's (100,000 jobs are 300,000 commands). The
  // first one also reads the heartbeats and the job sets, so that each chunk's jobs are judged
  // as their replies come: what Redis answered for one chunk is garbage before the next.
  const round = opts.known?.nextRound() ?? 0;
  const known = new Map<string, KnownJob>();
  let ctx: ModelContext | undefined;
  let instances: InstanceStatus[] = [];
  const jobs: JobStatus[] = [];
  for (let from = 0; from < plan.length || from === 0; from += READ_CHUNK) {
    const r = new Reads();
    if (from === 0) {
      for (const m of base.members) r.add(keys.instance(m), (p) => p.hgetall(keys.instance(m)));
      for (const d of digests) r.add(keys.registered(d), (p) => p.smembers(keys.registered(d)));
    }
    const chunk = plan.slice(from, from + READ_CHUNK).map((job) => {
      const before = opts.known?.get(job.id);
      // A job known from an earlier read has only its version read, unless this read is its
      // turn to be read whole (a change its version does not show: an older node's write, a
      // hand edit with redis-cli, is then seen within WHOLE_EVERY reads). Its turn follows from
      // its id, not its place in the list, which moves as other jobs come and go.
      return { ...job, before: before !== undefined && (turnOf(job.id) + round) % WHOLE_EVERY !== 0 ? before : undefined };
    });
    for (const { id, rows, lease, before } of chunk) queueJob(r, keys, id, rows && !before, lease, before !== undefined);
    const replies = await exec(redis, r);
    let at = 0;
    if (!ctx) {
      const heartbeats = replies.slice(0, base.members.length);
      const sets = new Map(digests.map((d, i): [string, DigestSet] => {
        const ids = new Set(strings(replies[base.members.length + i]));
        return [d, { exists: ids.size > 0, has: (id) => ids.has(id) }];
      }));
      const seen = liveInstances(base.members, heartbeats);
      instances = seen.instances;
      ctx = { nowMs: base.nowMs, live: seen.live, registered: registeredFrom(liveNodes(base, heartbeats), sets), failingStreak: opts.failingStreak ?? DEFAULT_FAILING_STREAK, intern: interning() };
      at = base.members.length + digests.length;
    }
    const found = chunk.map(({ id, rows, lease, before }) => {
      let stats: Record<string, string> | undefined;
      let instanceFields: Record<string, string> = {};
      let moved = false;
      if (before) {
        const [version, createdAt] = fieldsOf(replies[at++]);
        moved = statsVersion(version, createdAt) !== before.version;
      } else {
        stats = hash(replies[at++]);
        if (rows) instanceFields = hash(replies[at++]);
      }
      const value = lease ? replies[at++] : null;
      const pttl = lease ? replies[at++] : null;
      const now: JobNow = {
        settings: withSettings.has(id) ? jobSettings(base.settings, id) : NO_SETTINGS,
        lease: typeof value === 'string' ? value : null,
        leasePttl: typeof pttl === 'number' ? pttl : null,
      };
      return { id, rows, lease, before: moved ? undefined : before, moved, stats, instanceFields, now };
    });
    // The stats of the known jobs that changed since, in one more round trip.
    const moved = found.filter((f) => f.moved);
    if (moved.length > 0) {
      const again = new Reads();
      for (const { id, rows } of moved) queueJob(again, keys, id, rows, false, false);
      const more = await exec(redis, again);
      let i = 0;
      for (const f of moved) {
        f.stats = hash(more[i++]);
        if (f.rows) f.instanceFields = hash(more[i++]);
      }
    }
    // A job whose scope changed since the scopes were learnt (its rows, or its lease, were left
    // out of the plan): what it lacks, in one more round trip (rare: a job's scope changes with
    // its code).
    const short = found.filter((f) => f.stats !== undefined && ((!f.rows && f.stats['scope'] !== 'installation') || (!f.lease && f.stats['scope'] !== 'instance')));
    if (short.length > 0) {
      const again = new Reads();
      for (const f of short) queueJob(again, keys, f.id, !f.rows, !f.lease, false, false);
      const more = await exec(redis, again);
      let i = 0;
      for (const f of short) {
        if (!f.rows) f.instanceFields = hash(more[i++]);
        if (!f.lease) {
          const [value, pttl] = [more[i++], more[i++]];
          f.now = { ...f.now, lease: typeof value === 'string' ? value : null, leasePttl: typeof pttl === 'number' ? pttl : null };
        }
      }
    }
    for (const { id, before, stats, instanceFields, now } of found) {
      let job: KnownJob;
      if (before) job = rejudge(before, now, ctx);
      else {
        const s = stats ?? {};
        if (opts.scopes && s['scope']) opts.scopes.set(id, s['scope']);
        job = knownJob({ id, stats: s, instanceFields, ...now }, statsVersion(s['version'], s['createdAt']) ?? '', ctx);
      }
      if (job.version !== '') known.set(id, job);
      jobs.push(job.status);
    }
  }
  opts.known?.keep(known);
  const problems: StatusProblem[] = [];
  if (base.settingsCorrupt) {
    const { code, message } = await corruptSettings(redis, keys.settings);
    problems.push({ code, key: keys.settings, message });
  }
  return { generatedAt: new Date(base.nowMs).toISOString(), jobs, instances, problems };
}

/** A recent run as stored; undefined (left out) when leasehold did not write it, or a node of another version did with an outcome this one does not know. */
function parseRun(text: string): RecentRun | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined; // not JSON: not written by leasehold
  }
  if (v === null || typeof v !== 'object') return undefined;
  return outcome((v as { outcome?: unknown }).outcome) === null ? undefined : (v as RecentRun);
}

/** One job with its recent runs; undefined when no node ever registered it. */
export async function readJob(redis: RedisClient, keys: Keys, jobId: string, opts: ReadOptions = {}): Promise<JobDetail | undefined> {
  const base = await readBase(redis, keys, jobId);
  if (base.jobIds.length === 0) return undefined;
  const reads = new Reads().add(keys.stats(jobId), (p) => {
    p.hgetall(keys.stats(jobId)).hgetall(keys.instanceStats(jobId)).get(keys.lease(jobId)).pttl(keys.lease(jobId));
    p.lrange(keys.runs(jobId), 0, -1);
  });
  for (const m of base.members) reads.add(keys.instance(m), (p) => p.hgetall(keys.instance(m)));
  const digests = digestsOf(base.members, base.digests);
  for (const d of digests) reads.add(keys.registered(d), (p) => p.sismember(keys.registered(d), jobId).exists(keys.registered(d)));
  const r = await exec(redis, reads);
  const heartbeats = r.slice(5, 5 + base.members.length);
  const sets = new Map(digests.map((d, i): [string, DigestSet] => {
    const [member, size] = [r[5 + base.members.length + 2 * i], r[6 + base.members.length + 2 * i]];
    return [d, { exists: typeof size === 'number' && size > 0, has: () => member === 1 }];
  }));
  const { live } = liveInstances(base.members, heartbeats);
  const ctx: ModelContext = { nowMs: base.nowMs, live, registered: registeredFrom(liveNodes(base, heartbeats), sets), failingStreak: opts.failingStreak ?? DEFAULT_FAILING_STREAK };
  const status = jobStatus(
    {
      id: jobId,
      stats: hash(r[0]),
      instanceFields: hash(r[1]),
      settings: jobSettings(base.settings, jobId),
      lease: typeof r[2] === 'string' ? r[2] : null,
      leasePttl: typeof r[3] === 'number' ? r[3] : null,
    },
    ctx,
  );
  const recentRuns = strings(r[4]).flatMap((t) => parseRun(t) ?? []);
  return { ...status, recentRuns };
}
