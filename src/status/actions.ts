/**
 * What the HTTP routes do, over Redis and this node's runner: read the status, judge
 * health, and the admin actions. An installation job's "run now" starts here (its claim
 * keeps it to one run cluster-wide); an instance job's goes to every live node over the
 * control channel; pause and resume write the settings hash and tell every node at once.
 * @module
 */
import { redisProblem, type RedisClient } from '../redis/connection.js';
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import { withDeadline } from '../clock.js';
import type { Scheduler } from '../runner/runner.js';
import type { Keys } from '../redis/keys.js';
import type { ActionResult, HealthReason, HealthReport, ManageApi } from './api.js';
import { publishControl } from './control.js';
import { randomUUID } from 'node:crypto';
import { forgetJob, forgetRefusal } from './forget.js';
import { KnownJobs } from './known.js';
import { readCluster, readJob } from './read.js';
import { corruptSettings, isWrongType, type RedisSettings } from './settings.js';
import { SnapshotCache } from './snapshot.js';
import { parseLease } from './build.js';
import type { LeaseStatus } from './model.js';
import { JobSnapshots } from './job-snapshots.js';
import { MAX_UNPAGED_JOBS, checkUnpaged, pageOf } from './page.js';

/** How long `GET /health` waits for Redis to answer PING, in ms. */
const HEALTH_PING_TIMEOUT_MS = 1_000;

/**
 * What the API asks of this node's scheduler: whether a job is here, and running it here. A
 * process that is no node answers that no job is here, so every action goes through Redis.
 */
export type ManageScheduler = Pick<Scheduler, 'instanceId' | 'clock' | 'job' | 'jobs' | 'runNow'>;

/** What {@link createManageApi} needs. */
export interface ManageApiDeps {
  readonly core: ManageScheduler;
  /** A `stats` connection. */
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly settings: RedisSettings;
  readonly failingStreak: number;
  /** Asks every node to cancel the job's run in progress; resolves to the nodes that did. */
  readonly cancelEverywhere: (jobId: string) => Promise<string[]>;
  /** Told about a background read of the status that failed. */
  readonly onReadError: (err: unknown) => void;
}

/** Redis's own errors become `redisError` (the routes answer 503 for those). */
async function redisCall<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    throw new LeaseholdError(ErrorCodes.redisError, `Redis failed: ${errorMessage(err)}`, { cause: err });
  }
}

function result(statusCode: number, body: Record<string, unknown>): ActionResult {
  return { statusCode, body };
}

function problem(statusCode: number, message: string): ActionResult {
  const error = statusCode === 404 ? 'Not Found' : statusCode === 409 ? 'Conflict' : 'Error';
  return result(statusCode, { statusCode, error, message });
}

/** 409 for a run now of a job whose run holds its lease: the body names that run. */
function isRunning(id: string, lease: LeaseStatus): ActionResult {
  const since = lease.since === null ? '' : ` since ${lease.since}`;
  return result(409, {
    statusCode: 409,
    error: 'Conflict',
    message: `job ${JSON.stringify(id)} is running on ${lease.holder}${since}: it was not started again`,
    jobId: id,
    running: { instanceId: lease.holder, since: lease.since, fencingToken: lease.fencingToken },
  });
}

/** Builds the routes' API for one runner. */
export function createManageApi(d: ManageApiDeps): ManageApi {
  const { core, redis, keys } = d;
  const opts = { failingStreak: d.failingStreak };
  const knownJobs = new KnownJobs();
  // An installation small enough to be answered whole has its text made as it is read.
  const snapshot = new SnapshotCache(() => readCluster(redis, keys, { ...opts, known: knownJobs }), d.onReadError, core.clock, { encodeAhead: (status) => status.jobs.length <= MAX_UNPAGED_JOBS });
  const jobs = new JobSnapshots({
    read: (id) => readJob(redis, keys, id, opts),
    local: (id) => core.job(id) !== undefined,
    cluster: async () => (await snapshot.get()).value,
    onBackgroundError: d.onReadError,
    clock: core.clock,
  });
  const invalidate = (id: string): void => {
    snapshot.invalidate();
    jobs.invalidate(id);
  };
  const ping = (): Promise<unknown> => withDeadline(core.clock, redis.ping(), HEALTH_PING_TIMEOUT_MS, () => new Error(`PING got no answer within ${HEALTH_PING_TIMEOUT_MS} ms`));

  const runningRun = async (id: string): Promise<LeaseStatus | undefined> => {
    const [value, pttl] = await redisCall(Promise.all([redis.get(keys.lease(id)), redis.pttl(keys.lease(id))]));
    return value === null ? undefined : parseLease(value, pttl);
  };

  const known = async (id: string): Promise<{ registered: boolean; scope: string | null }> => {
    const [registered, scope] = await redisCall(Promise.all([redis.sismember(keys.jobs, id), redis.hget(keys.stats(id), 'scope')]));
    return { registered: registered === 1, scope };
  };

  const setPaused = async (id: string, paused: boolean): Promise<ActionResult> => {
    if (!core.job(id) && !(await known(id)).registered) return problem(404, `unknown job ${JSON.stringify(id)}`);
    try {
      await redis.hset(keys.settings, `${id}.paused`, String(paused));
    } catch (err) {
      // A value of another type at the settings key is said as it is, not as Redis being down.
      if (!isWrongType(err)) throw new LeaseholdError(ErrorCodes.redisError, `Redis failed: ${errorMessage(err)}`, { cause: err });
      throw await redisCall(corruptSettings(redis, keys.settings));
    }
    const notified = await redisCall(publishControl(redis, keys.control, { type: 'settings', jobId: id }));
    await d.settings.load();
    invalidate(id);
    return result(200, { jobId: id, paused, notified });
  };

  return {
    cluster: async () => (await snapshot.get()).value,
    async clusterJson() {
      const snap = await snapshot.get();
      // Checked before the text is asked for: a refused answer must not encode the whole status.
      checkUnpaged(snap.value.jobs.length);
      return snap.json;
    },
    jobsPage: async (query) => pageOf((await snapshot.get()).value, query),
    job: (id) => jobs.get(id),

    async ready(): Promise<HealthReport> {
      try {
        await ping();
        return { status: 'ok', reasons: [] };
      } catch (err) {
        return { status: 'unavailable', reasons: [{ check: 'redis', message: redisProblem(redis, err) }] };
      }
    },

    async health(): Promise<HealthReport> {
      const reasons: HealthReason[] = [];
      try {
        await ping();
        const { value: status } = await snapshot.get();
        for (const p of status.problems) reasons.push({ check: 'settings', code: p.code, key: p.key, message: p.message });
        for (const j of status.jobs) {
          if (j.active && (j.state === 'degraded' || j.state === 'invalidSchedule')) {
            reasons.push({ check: 'job', jobId: j.id, state: j.state, reasons: j.degradedReasons });
          }
        }
      } catch (err) {
        reasons.push({ check: 'redis', message: redisProblem(redis, err) });
        // This node's own view still tells which of its jobs have a bad schedule.
        for (const v of core.jobs()) {
          if (v.state === 'invalidSchedule') reasons.push({ check: 'job', jobId: v.job.id, state: v.state, reasons: [`invalid schedule: ${v.invalidCause ?? ''}`] });
        }
      }
      return { status: reasons.length === 0 ? 'ok' : 'unavailable', reasons };
    },

    async run(id) {
      const local = core.job(id);
      const { registered, scope } = local ? { registered: true, scope: local.job.scope } : await known(id);
      if (!registered) return problem(404, `unknown job ${JSON.stringify(id)}`);
      if (scope === 'installation') {
        // A run of it holds its lease: the run asked for is going on (no claim, so no skip anywhere).
        const running = await runningRun(id);
        if (running) return isRunning(id, running);
        const requestId = randomUUID();
        if (!local) {
          // Every node that has the job tries; its manual claim runs it once cluster-wide.
          const notified = await redisCall(publishControl(redis, keys.control, { type: 'run', jobId: id, requestId }));
          return result(202, { jobId: id, action: 'run', scope, notified, message: 'a node that runs this job runs it now, once cluster-wide (unless a run of it holds the lease)' });
        }
        if (core.runNow(id, requestId)) {
          return result(202, { jobId: id, action: 'run', scope, instanceId: core.instanceId, message: 'started on this node unless another node holds the lease' });
        }
        const why = local.running ? 'it is running' : local.state === 'invalidSchedule' ? 'its schedule is invalid' : 'the runner is not running';
        return problem(409, `job ${JSON.stringify(id)} cannot start now: ${why}`);
      }
      const notified = await redisCall(publishControl(redis, keys.control, { type: 'run', jobId: id }));
      return result(202, { jobId: id, action: 'run', scope: 'instance', notified, message: 'every live node that has this job runs it now (unless it is running there)' });
    },

    pause: (id) => setPaused(id, true),
    resume: (id) => setPaused(id, false),

    async cancel(id) {
      if (!core.job(id) && !(await known(id)).registered) return problem(404, `unknown job ${JSON.stringify(id)}`);
      const nodes = await redisCall(d.cancelEverywhere(id));
      if (nodes.length === 0) return problem(409, `job ${JSON.stringify(id)} has no run in progress`);
      invalidate(id);
      return result(200, { jobId: id, cancelled: true, instances: nodes });
    },

    async forget(id) {
      if (core.job(id)) return problem(409, `job ${JSON.stringify(id)} is registered on this node (${core.instanceId}); remove it from the code of every node first`);
      const r = await forgetJob(redis, keys, id);
      invalidate(id);
      if (r.kind === 'unknown') return problem(404, `unknown job ${JSON.stringify(id)}`);
      if (r.kind === 'live') return problem(409, forgetRefusal(id, r));
      return result(200, { jobId: id, forgotten: true, keys: r.keys });
    },
  };
}
