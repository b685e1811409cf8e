/**
 * The status layer of one node: stats writer, job and instance registry, settings source,
 * control channel and the status API the HTTP routes mount from. It takes the scheduler (a
 * narrow port of it) and the connections it is handed; the composition root (`create/`) makes
 * both, in two steps around the scheduler, which is built with what the first step gives:
 *
 * 1. {@link statusSources}: the settings source and the claim order (over the registry's view of
 *    the live nodes): the scheduler's ports. They reach the scheduler only once it runs.
 * 2. {@link createStatusLayer}: the rest, over the scheduler built with them.
 *
 * Then `await layer.start()` before the scheduler starts (so the first fires see the settings
 * hash); on shutdown the scheduler stops first (runs end and are recorded), then `layer.stop()`,
 * and only then are the connections closed.
 * @module
 */
import { readFileSync } from 'node:fs';
import type { RedisClient } from '../redis/connection.js';
import type { Logger } from '../logger.js';
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import { waitAtMost, type Timers } from '../clock.js';
import { whenReady } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import type { Scheduler } from '../runner/runner.js';
import type { ClaimOrder } from '../runner/order.js';
import type { ManageApi } from './api.js';
import { createManageApi } from './actions.js';
import { CancelRequests } from './cancel.js';
import { rendezvousOrder } from './spread.js';
import { publishControl, subscribeControl } from './control.js';
import { DEFAULT_FAILING_STREAK, type ClusterStatus } from './model.js';
import { Registry } from './registry.js';
import { RedisSettings } from './settings.js';
import type { StreakChange } from './batch.js';
import { StatsWriter } from './writer.js';

/** How long `start()` waits for Redis before going on without it, in ms. */
const START_WAIT_MS = 1_000;
/**
 * How long `stop()` keeps trying to write what is left and to remove the heartbeat, at once, in
 * ms: the status connection's command timeout, so a stalled Redis costs a stop this once.
 */
const STOP_MS = 2_000;

/** What the settings source and the registry ask of the scheduler, once it runs. */
export type SourcesScheduler = Pick<Scheduler, 'refresh' | 'now' | 'jobs'>;

/** What the status layer asks of the scheduler. */
export type StatusScheduler = Pick<Scheduler, 'instanceId' | 'clock' | 'on' | 'now' | 'jobs' | 'job' | 'triggerOf' | 'cancel' | 'runNow'>;

/** Options of {@link statusSources}. */
export interface StatusSourcesOptions {
  /** The status connection (a `stats` connection), handed in; the layer never closes it. */
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly logger: Logger;
  readonly clock: Timers;
  readonly instanceId: string;
  /** The scheduler, reached only once it runs (it is built with what this returns). */
  readonly scheduler: SourcesScheduler;
  /** leasehold's version, shown in the instance list. Default: this package's. */
  readonly version?: string;
  /** How long after a tick the backup claimer claims, ms. Default 100. */
  readonly handoffMs?: number;
}

/** The status layer's parts that the scheduler is built with. */
export interface StatusSources {
  /** The scheduler's settings source (the settings hash, cached). */
  readonly settings: RedisSettings;
  /** Who claims each installation tick, over the live nodes the heartbeat sees. */
  readonly claimOrder: ClaimOrder;
  /** The registry of jobs and this node's heartbeat, whose live nodes the claim order reads. */
  readonly registry: Registry;
}

/** Options of {@link createStatusLayer}. */
export interface StatusLayerOptions {
  readonly sources: StatusSources;
  readonly scheduler: StatusScheduler;
  /** The status connection, the one the sources use. */
  readonly redis: RedisClient;
  /** The control connection (a `sub` connection), handed in; the layer never closes it. */
  readonly sub: RedisClient;
  readonly keys: Keys;
  readonly logger: Logger;
  /** Unsuccessful runs in a row from which a job is degraded. Default 3. */
  readonly failingStreak?: number;
  /** How many recent runs each job keeps in Redis. Default 50. */
  readonly recentRuns?: number;
  /** Called with the id of each job the stats first see (the metrics create its series). */
  readonly onNewJob?: (jobId: string) => void;
  /** Told when this node's stats write starts or ends an installation job's failing streak (the log). */
  readonly onStreak?: ((change: StreakChange) => void) | undefined;
}

/** The status layer; see the module comment for the order of calls. */
export interface StatusLayer {
  /** What the routes call. */
  readonly api: ManageApi;
  /** Reads the settings, registers jobs and this node, subscribes; never fails for an absent Redis. */
  start(): Promise<void>;
  /** Writes what is left (bounded) and removes the heartbeat; the connections stay open. */
  stop(): Promise<void>;
  /** Writes pending stats now; resolves false if something could not be written. */
  flush(): Promise<boolean>;
  /** The cluster's status, read from Redis. */
  read(): Promise<ClusterStatus>;
  /** Stats batches this node dropped so far, by job: Redis refused each at every try (a key of the wrong type). */
  droppedBatches(): ReadonlyMap<string, number>;
}

/**
 * Checks the status layer's options before anything is built.
 * @throws LeaseholdError `invalidConfig` naming the option.
 */
export function checkStatusOptions(opts: { readonly failingStreak?: number | undefined; readonly recentRuns?: number | undefined }): void {
  const failingStreak = opts.failingStreak ?? DEFAULT_FAILING_STREAK;
  if (!Number.isSafeInteger(failingStreak) || failingStreak < 1) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `failingStreak must be an integer >= 1, got ${String(opts.failingStreak)}`);
  }
  if (opts.recentRuns !== undefined && (!Number.isSafeInteger(opts.recentRuns) || opts.recentRuns < 1 || opts.recentRuns > 1_000)) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `recentRuns must be a whole number from 1 to 1000, got ${String(opts.recentRuns)}`);
  }
}

/** The installed package's version (`unknown` when its package.json cannot be read). */
export function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown'; // not packaged as usual; the version is only informative
  }
}

/** The settings source, the registry and the claim order: step 1, before the scheduler. */
export function statusSources(opts: StatusSourcesOptions): StatusSources {
  const { redis, keys, logger, clock, instanceId, scheduler } = opts;
  const settings = new RedisSettings({ redis, key: keys.settings, logger, clock, onChange: (id) => scheduler.refresh(id) });
  const registry = new Registry({
    redis,
    keys,
    instanceId,
    version: opts.version ?? packageVersion(),
    logger,
    now: () => scheduler.now(),
    jobIds: () => scheduler.jobs().map((v) => v.job.id),
    instanceJobIds: () => scheduler.jobs().filter((v) => v.job.scope === 'instance').map((v) => v.job.id),
    onBeat: () => settings.heartbeat(),
    clock,
  });
  const claimOrder = rendezvousOrder(instanceId, () => registry.peers(), opts.handoffMs);
  return { settings, registry, claimOrder };
}

/** The status layer over the scheduler built with `opts.sources`: step 2. */
export function createStatusLayer(opts: StatusLayerOptions): StatusLayer {
  checkStatusOptions(opts);
  const { scheduler: core, logger, redis, sub, keys } = opts;
  const { settings, registry, claimOrder } = opts.sources;
  const clock = core.clock;
  let down = false;
  redis.on('error', (err: Error) => {
    if (!down) logger.warn({ error: err.message }, 'status connection to Redis failed (%s); retrying', err.message);
    down = true;
  });
  const writer = new StatsWriter({
    core,
    redis,
    keys,
    logger,
    clock,
    // A job's minute refresh comes from the node ranked first for it, as its fixedDelay claims do.
    refreshes: (jobId) => claimOrder.place(jobId, undefined) === 0,
    onStreak: opts.onStreak,
    ...(opts.recentRuns !== undefined ? { recentRuns: opts.recentRuns } : {}),
    onNewJob: (id) => {
      opts.onNewJob?.(id);
      registry.jobsChanged();
    },
  });
  const offRemoved = core.on('jobRemoved', () => registry.jobsChanged());
  redis.on('ready', () => {
    if (down) logger.info('status connection to Redis is back');
    down = false;
    void settings.load();
    void registry.beat();
  });
  const cancels = new CancelRequests(clock);
  const onCancel = (jobId: string, requestId: string | undefined): void => {
    if (!core.cancel(jobId)) return;
    logger.info({ jobId }, 'run of %s cancelled through the control channel', jobId);
    if (!requestId) return;
    publishControl(redis, keys.control, { type: 'cancelled', jobId, requestId, instanceId: core.instanceId }).catch((err: unknown) =>
      logger.debug({ jobId, error: errorMessage(err) }, 'answering the cancel request for %s failed: the requester does not count this node', jobId),
    );
  };
  const api = createManageApi({
    core,
    redis,
    keys,
    settings,
    cancelEverywhere: async (jobId) => {
      const { requestId, answers } = cancels.open();
      await publishControl(redis, keys.control, { type: 'cancel', jobId, requestId });
      return answers;
    },
    failingStreak: opts.failingStreak ?? DEFAULT_FAILING_STREAK,
    onReadError: (err) => logger.debug({ error: errorMessage(err) }, 'refreshing the status from Redis failed'),
  });
  let started = false;

  return {
    api,
    async start() {
      if (started) return;
      started = true;
      let reachable = true;
      try {
        await whenReady(redis, START_WAIT_MS);
      } catch (err) {
        reachable = false;
        logger.warn({ error: errorMessage(err) }, 'Redis is not reachable for the status yet; counting in memory and retrying');
      }
      const subscribed = subscribeControl(sub, {
        channel: keys.control,
        logger,
        clock,
        onMessage: (m) => {
          if (m.type === 'settings') void settings.load();
          else if (m.type === 'cancel') onCancel(m.jobId, m.requestId);
          else if (m.type === 'cancelled') cancels.answer(m.requestId, m.instanceId);
          else if (m.type === 'left' || m.type === 'joined') {
            // Its ticks are ranked over the live nodes now, not at the next heartbeat: a tick a
            // node that left ranked first and second would be claimed by nobody until then, and
            // one a node that joined ranks differently would be claimed twice.
            if (m.instanceId !== core.instanceId) registry.nodesChanged();
          }
          else if (core.job(m.jobId)) {
            logger.info({ jobId: m.jobId }, 'run of %s requested through the control channel', m.jobId);
            core.runNow(m.jobId, m.requestId);
          }
        },
        watch: { key: keys.settings, onChange: () => void settings.load(), onWatching: (on) => settings.watching(on) },
      });
      await settings.load();
      settings.start();
      writer.start();
      await registry.start();
      // With Redis there, be subscribed before the first fire; without, go on (it resubscribes).
      if (reachable) await waitAtMost(clock, subscribed, START_WAIT_MS, true);
    },
    async stop() {
      offRemoved();
      await Promise.all([settings.stop(STOP_MS), writer.stop(STOP_MS), registry.stop(STOP_MS)]);
    },
    flush: () => writer.flush(),
    read: () => api.cluster(),
    droppedBatches: () => writer.dropped,
  };
}
