/**
 * The status layer of one runner: stats writer, job and instance registry, settings source,
 * control channel and the status API the HTTP routes mount from, behind one entry point.
 * The composition root (`create.ts`) wires it to the runner, the metrics and the routes.
 *
 * Order of use: create it, give `settings` to the runner (`core.setSettings`), then
 * `await layer.start()` before `core.start()` (so the first fires see the settings hash);
 * on shutdown `await core.stop()` first (runs end and are recorded), then `layer.stop()`.
 * @module
 */
import { readFileSync } from 'node:fs';
import type { RedisClient } from '../redis/connection.js';
import type { Logger } from '../logger.js';
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import { waitAtMost } from '../clock.js';
import { closeRedis, createRedis, whenReady } from '../redis/connection.js';
import { type RedisTarget } from '../redis/target.js';
import { keys as keyNames } from '../redis/keys.js';
import type { RunnerCore, SettingsSource } from '../runner/runner.js';
import type { ManageApi } from './api.js';
import { createManageApi } from './actions.js';
import { CancelRequests } from './cancel.js';
import { rendezvousOrder } from './spread.js';
import type { ClaimOrder } from '../runner/order.js';
import { publishControl, subscribeControl } from './control.js';
import { DEFAULT_FAILING_STREAK, type ClusterStatus } from './model.js';
import { Registry } from './registry.js';
import { RedisSettings } from './settings.js';
import { StatsWriter } from './writer.js';

/** Command timeout of the status layer's Redis connection, in ms. */
const STATUS_COMMAND_TIMEOUT_MS = 2_000;
/** How long `start()` waits for Redis before going on without it, in ms. */
const START_WAIT_MS = 1_000;
/** How long `stop()` keeps trying to write what is left, in ms. */
const STOP_FLUSH_MS = 3_000;

/** Options of {@link createStatusLayer}. */
export interface StatusLayerOptions {
  readonly core: RunnerCore;
  /**
   * Where Redis is: a URL, a target (one server, a Cluster, or a master behind Sentinel), or
   * a client whose address is reused (duplicated, never closed). Exactly one.
   */
  readonly redis: { readonly url?: string; readonly target?: RedisTarget; readonly client?: RedisClient };
  /** Key prefix. Default `leasehold`. */
  readonly prefix?: string;
  readonly logger: Logger;
  /** Unsuccessful runs in a row from which a job is degraded. Default 3. */
  readonly failingStreak?: number;
  /** leasehold's version, shown in the instance list. Default: this package's. */
  readonly version?: string;
  /** How long after a tick the backup claimer claims, ms. Default 100. */
  readonly handoffMs?: number;
  /** How many recent runs each job keeps in Redis. Default 50. */
  readonly recentRuns?: number;
  /** Called with the id of each job the stats first see (the metrics create its series). */
  readonly onNewJob?: (jobId: string) => void;
}

/** The status layer; see the module comment for the order of calls. */
export interface StatusLayer {
  /** The runner's settings source (the settings hash, cached). */
  readonly settings: SettingsSource;
  /** Who claims each installation tick, over the live nodes the heartbeat sees. */
  readonly claimOrder: ClaimOrder;
  /** What the routes call. */
  readonly api: ManageApi;
  /** Connects, reads the settings, registers jobs and this node; never fails for an absent Redis. */
  start(): Promise<void>;
  /** Writes what is left (bounded), removes the heartbeat, closes the connections. */
  stop(): Promise<void>;
  /** Writes pending stats now; resolves false if something could not be written. */
  flush(): Promise<boolean>;
  /** The cluster's status, read from Redis. */
  read(): Promise<ClusterStatus>;
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

/** Creates the status layer of a runner. */
export function createStatusLayer(opts: StatusLayerOptions): StatusLayer {
  const { core, logger } = opts;
  const failingStreak = opts.failingStreak ?? DEFAULT_FAILING_STREAK;
  if (!Number.isSafeInteger(failingStreak) || failingStreak < 1) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `failingStreak must be an integer >= 1, got ${String(opts.failingStreak)}`);
  }
  if (opts.recentRuns !== undefined && (!Number.isSafeInteger(opts.recentRuns) || opts.recentRuns < 1 || opts.recentRuns > 1_000)) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `recentRuns must be a whole number from 1 to 1000, got ${String(opts.recentRuns)}`);
  }
  const keys = keyNames(opts.prefix);
  const { url, target: where, client } = opts.redis;
  const target = client ? { client } : where ? { target: where } : { url };
  const redis = createRedis({ ...target, role: 'stats', commandTimeoutMs: STATUS_COMMAND_TIMEOUT_MS });
  const sub = createRedis({ ...target, role: 'sub' });
  let down = false;
  redis.on('error', (err: Error) => {
    if (!down) logger.warn({ error: err.message }, 'status connection to Redis failed (%s); retrying', err.message);
    down = true;
  });
  sub.on('error', (err: Error) => logger.debug({ error: err.message }, 'control connection error'));

  const clock = core.clock;
  const settings = new RedisSettings({ redis, key: keys.settings, logger, clock, onChange: (id) => core.refresh(id) });
  const registry = new Registry({
    redis,
    keys,
    instanceId: core.instanceId,
    version: opts.version ?? packageVersion(),
    logger,
    now: () => core.now(),
    jobIds: () => core.jobs().map((v) => v.job.id),
    instanceJobIds: () => core.jobs().filter((v) => v.job.scope === 'instance').map((v) => v.job.id),
    onBeat: () => settings.heartbeat(),
    clock,
  });
  const claimOrder = rendezvousOrder(core.instanceId, () => registry.peers(), opts.handoffMs);
  const writer = new StatsWriter({
    core,
    redis,
    keys,
    logger,
    clock,
    // A job's minute refresh comes from the node ranked first for it, as its fixedDelay claims do.
    refreshes: (jobId) => claimOrder.place(jobId, undefined) === 0,
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
    if (requestId) void publishControl(redis, keys.control, { type: 'cancelled', jobId, requestId, instanceId: core.instanceId }).catch(() => undefined);
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
    failingStreak,
    onReadError: (err) => logger.debug({ error: errorMessage(err) }, 'refreshing the status from Redis failed'),
  });
  let started = false;

  return {
    settings,
    claimOrder,
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
        onMessage: (m) => {
          if (m.type === 'settings') void settings.load();
          else if (m.type === 'cancel') onCancel(m.jobId, m.requestId);
          else if (m.type === 'cancelled') cancels.answer(m.requestId, m.instanceId);
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
      await settings.stop();
      await writer.stop(STOP_FLUSH_MS);
      await registry.stop();
      await Promise.all([closeRedis(redis), closeRedis(sub)]);
    },
    flush: () => writer.flush(),
    read: () => api.cluster(),
  };
}
