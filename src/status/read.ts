/**
 * Reads the cluster's status straight from Redis in pipelined round trips: first the job set,
 * the settings hash, the instance set, the nodes' digests and Redis time; then every job's
 * stats, per-instance rows (instance jobs) and lease (installation jobs: its time to live, and
 * its value only where it exists, with the stats that moved), {@link READ_CHUNK} jobs a
 * round trip, the first with every instance's heartbeat and the job sets of the digests. Each
 * chunk's jobs are built as it is answered, so a read holds one chunk's raw hashes at a time.
 * A node's reads keep what they found (`known.ts`): a job read before has only its stats'
 * version and `seenAt` read (a node's minute refresh changes `seenAt` alone and leaves
 * the version), and its stats again only when the version moved (one more round trip for the chunk).
 * On a single Redis those jobs of a chunk go in one call of `versions.lua`, which answers only
 * the jobs that moved or hold a lease.
 * On a Redis Cluster each round trip is one pipeline per slot, sent together.
 * @module
 */
import type { RedisClient } from '../redis/connection.js';
import { isCluster } from '../redis/pipeline.js';
import { commands } from '../redis/scripts.js';
import { queueVersions, versionsReply } from '../redis/stats-scripts.js';
import type { Keys } from '../redis/keys.js';
import type { RecentRun } from './batch.js';
import { outcome } from './fields.js';
import { interning, jobSettings, jobStatus, knownJob, rejudge, statsVersion, type JobNow, type KnownJob, type ModelContext } from './build.js';
import type { KnownJobs } from './known.js';
import { digestsOf, registeredFrom, type DigestSet } from './registered.js';
import { DEFAULT_FAILING_STREAK, type ClusterStatus, type InstanceStatus, type JobDetail, type JobStatus, type StatusProblem } from './model.js';
import { exec, fieldsOf, hash, leaseOf, liveInstances, liveNodes, readBase, Reads, strings } from './reads.js';
import { corruptSettings, parseSettings } from './settings.js';

/** Options of the readers. */
export interface ReadOptions {
  /** Streak length from which a job is degraded (default {@link DEFAULT_FAILING_STREAK}). */
  readonly failingStreak?: number;
  /** What the node's earlier reads found (kept up to date by this one); see {@link KnownJobs}. */
  readonly known?: KnownJobs;
}

/**
 * How many jobs' reads go in one pipeline. Each chunk's replies are parsed and its jobs built
 * in one go, holding the node's event loop: at 250 jobs that is a few ms, so requests and ticks
 * are served between the chunks (1,000 jobs a chunk held it for 20 to 60 ms in S4).
 */
const READ_CHUNK = 250;

/** What is read of one job's stats hash: all of it, its version alone, or nothing. */
type StatsRead = 'whole' | 'version' | 'none';

/**
 * What is read of one job's lease: its value and time to live, its time to live alone (most
 * jobs hold no lease at a given moment: their value is read only when it exists), its value
 * alone, or nothing.
 */
type LeaseRead = 'both' | 'pttl' | 'value' | 'none';

/** Queues the reads of one job: its stats, its per-instance rows, its lease. */
function queueJob(r: Reads, keys: Keys, id: string, stats: StatsRead, rows: boolean, lease: LeaseRead): void {
  const key = keys.stats(id);
  if (stats === 'whole') r.add(key, (p) => p.hgetall(key));
  else if (stats === 'version') r.add(key, (p) => p.hmget(key, 'version', 'createdAt', 'seenAt'));
  if (rows) r.add(key, (p) => p.hgetall(keys.instanceStats(id)));
  if (lease === 'both') r.add(key, (p) => p.get(keys.lease(id)).pttl(keys.lease(id)));
  else if (lease === 'pttl') r.add(key, (p) => p.pttl(keys.lease(id)));
  else if (lease === 'value') r.add(key, (p) => p.get(keys.lease(id)));
}

/** A PTTL's reply for a key that exists (with a time to live, or -1 without one). */
function exists(pttl: unknown): boolean {
  return typeof pttl === 'number' && pttl !== -2;
}

/** The settings of the jobs the settings hash does not name (most): one read-only object. */
const NO_SETTINGS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** Every job and every live instance, as `GET /manage/jobs` returns them. */
export async function readCluster(redis: RedisClient, keys: Keys, opts: ReadOptions = {}): Promise<ClusterStatus> {
  const base = await readBase(redis, keys);
  const knownRead = opts.known?.begin();
  const single = !isCluster(redis);
  if (single) commands(redis); // before the chunks' pipelines are made, which then have versions.lua
  // The job sets of the nodes' digests (few: the nodes that run the same jobs share one).
  const digests = digestsOf(base.members, base.digests);
  // Jobs with a field in the settings hash (most have none: they share one empty object).
  const withSettings = parseSettings(base.settings);
  // In pipelines of READ_CHUNK jobs, one after another: each command's timeout then bounds
  // one chunk's wait, not the whole installation's (100,000 jobs on a Cluster are 200,000 commands). The
  // first one also reads the heartbeats and the job sets, so that each chunk's jobs are judged
  // as their replies come: what Redis answered for one chunk is garbage before the next.
  let ctx: ModelContext | undefined;
  let instances: InstanceStatus[] = [];
  const jobs: JobStatus[] = [];
  for (let from = 0; from < base.jobIds.length || from === 0; from += READ_CHUNK) {
    const r = new Reads();
    if (from === 0) {
      for (const m of base.members) r.add(keys.instance(m), (p) => p.hgetall(keys.instance(m)));
      for (const d of digests) r.add(keys.registered(d), (p) => p.smembers(keys.registered(d)));
    }
    // What is read per job: stats always (a job known from an earlier read has only its version
    // read, see known.ts); per-instance rows unless the last read found an installation job; the
    // lease unless it found an instance job.
    const chunk = base.jobIds.slice(from, from + READ_CHUNK).map((id) => {
      const scope = knownRead?.scope(id);
      return { id, rows: scope !== 'installation', lease: scope !== 'instance', before: knownRead?.job(id) };
    });
    // On a single Redis the jobs known from an earlier read go in one call of versions.lua, which
    // answers only those that moved or hold a lease (a Cluster keeps each job's keys in its own
    // slot: there they are read command by command).
    const known = single ? chunk.filter((c) => c.before !== undefined) : [];
    for (const { id, rows, lease, before } of chunk) {
      if (!(single && before)) queueJob(r, keys, id, before ? 'version' : 'whole', rows && !before, lease ? 'pttl' : 'none');
    }
    if (known.length > 0) {
      const asked = known.map(({ id, lease, before }) => ({ statsKey: keys.stats(id), leaseKey: keys.lease(id), version: before?.version ?? '', seenAt: before?.status.lastRegisteredAt ?? '', lease }));
      r.add(asked[0]?.statsKey, (p) => queueVersions(p, asked));
    }
    const replies = await exec(redis, r);
    const versions = known.length > 0 ? versionsReply(replies.at(-1), known.length) : [];
    let v = 0;
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
      let seenAt: string | undefined;
      let pttl: unknown = null;
      let value: string | null = null;
      if (before && single) {
        const found = versions[v++];
        if (found === null) {
          // As the last read found it, with no lease.
          seenAt = before.status.lastRegisteredAt ?? undefined;
          pttl = lease ? -2 : null;
        } else if (found !== undefined) {
          moved = statsVersion(found.version, found.createdAt) !== before.version;
          seenAt = found.seenAt;
          pttl = lease ? found.pttl : null;
          value = found.lease;
        }
      } else if (before) {
        const [version, createdAt, seen] = fieldsOf(replies[at++]);
        moved = statsVersion(version, createdAt) !== before.version;
        seenAt = seen;
        if (lease) pttl = replies[at++];
      } else {
        stats = hash(replies[at++]);
        if (rows) instanceFields = hash(replies[at++]);
        if (lease) pttl = replies[at++];
      }
      const now: JobNow = { settings: withSettings.has(id) ? jobSettings(base.settings, id) : NO_SETTINGS, ...leaseOf(value, pttl) };
      return { id, rows, lease, before: moved ? undefined : before, moved, held: value === null && exists(pttl), stats, instanceFields, now, seenAt };
    });
    // The stats of the known jobs that changed since, and the value of the leases that exist,
    // in one more round trip.
    const second = found.filter((f) => f.moved || f.held);
    if (second.length > 0) {
      const reads = new Reads();
      for (const { id, rows, moved, held } of second) queueJob(reads, keys, id, moved ? 'whole' : 'none', moved && rows, held ? 'value' : 'none');
      const more = await exec(redis, reads);
      let i = 0;
      for (const f of second) {
        if (f.moved) {
          f.stats = hash(more[i++]);
          if (f.rows) f.instanceFields = hash(more[i++]);
        }
        if (f.held) f.now = { ...f.now, ...leaseOf(more[i++], f.now.leasePttl) };
      }
    }
    // A job whose scope changed since the last read (its rows, or its lease, were left
    // out of the plan): what it lacks, in one more round trip (rare: a job's scope changes with
    // its code).
    const short = found.filter((f) => f.stats !== undefined && ((!f.rows && f.stats['scope'] !== 'installation') || (!f.lease && f.stats['scope'] !== 'instance')));
    if (short.length > 0) {
      const again = new Reads();
      for (const f of short) queueJob(again, keys, f.id, 'none', !f.rows, f.lease ? 'none' : 'both');
      const more = await exec(redis, again);
      let i = 0;
      for (const f of short) {
        if (!f.rows) f.instanceFields = hash(more[i++]);
        if (!f.lease) f.now = { ...f.now, ...leaseOf(more[i++], more[i++]) };
      }
    }
    for (const { id, before, stats, instanceFields, now, seenAt } of found) {
      let job: KnownJob;
      if (before) job = rejudge(before, now, ctx, seenAt);
      else {
        const s = stats ?? {};
        job = knownJob({ id, stats: s, instanceFields, ...now }, statsVersion(s['version'], s['createdAt']) ?? '', ctx);
      }
      jobs.push((knownRead?.found(id, job) ?? job).status);
    }
  }
  knownRead?.end(base.jobIds);
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
      ...leaseOf(r[2], r[3]),
    },
    ctx,
  );
  const recentRuns = strings(r[4]).flatMap((t) => parseRun(t) ?? []);
  return { ...status, recentRuns };
}
