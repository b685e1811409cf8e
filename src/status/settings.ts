/**
 * The settings source backed by the hash `<prefix>:settings` (SPEC 6): fields
 * `<jobId>.paused`, `.cron`, `.zone`, `.fixedRate`, `.fixedDelay`, `.timeout`, `.lease`.
 * The hash is read at once when Redis tells that it changed (client-side caching, see
 * `subscribeControl`) or a control message asks, on every reconnection, and with every
 * heartbeat as a safety net ({@link RedisSettings.heartbeat}, no wake-up of its own); where
 * Redis cannot tell (a Cluster, an ACL without `CLIENT TRACKING`, Redis older than 6) every
 * {@link SETTINGS_POLL_MS}, which keeps a pause within a second either way. The runner reads
 * the last values synchronously from memory, so a slow or absent Redis never blocks it, and the
 * last known settings stay in force. Jobs whose fields changed are handed to `onChange` (the
 * runner's `refresh`).
 * @module
 */
import type { RedisClient } from '../redis/connection.js';
import type { Logger } from '../logger.js';
import type { SettingsSource } from '../runner/runner.js';
import type { JobOverrides } from '../schedule/trigger.js';
import { ErrorCodes, errorMessage, leaseholdError, type LeaseholdError } from '../errors.js';
import { every, systemClock, waitAtMost, type Repeating, type Timers } from '../clock.js';

/** The settings hash is read this often, in ms, while Redis does not tell of its changes. */
export const SETTINGS_POLL_MS = 500;

/** The per-job fields of the settings hash. */
export const SETTING_FIELDS = ['paused', 'cron', 'zone', 'fixedRate', 'fixedDelay', 'timeout', 'lease'] as const;

const FIELDS = new Set<string>(SETTING_FIELDS);

/** Splits the settings hash into overrides per job id; unknown fields are left out. */
export function parseSettings(hash: Record<string, string>): Map<string, JobOverrides> {
  const out = new Map<string, Record<string, string>>();
  for (const [field, value] of Object.entries(hash)) {
    const dot = field.lastIndexOf('.');
    if (dot <= 0) continue;
    const name = field.slice(dot + 1);
    if (!FIELDS.has(name)) continue;
    const jobId = field.slice(0, dot);
    let o = out.get(jobId);
    if (!o) out.set(jobId, (o = {}));
    o[name] = value;
  }
  return out as Map<string, JobOverrides>;
}

/** Whether `err` is Redis refusing a command on a key that holds a value of another type. */
export function isWrongType(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('WRONGTYPE');
}

/** The `corruptSettings` error of the settings hash `key`, naming the type Redis holds there. */
export async function corruptSettings(redis: RedisClient, key: string): Promise<LeaseholdError> {
  return leaseholdError(ErrorCodes.corruptSettings, { key, found: await redis.type(key) });
}

/** The overrides of a job the hash does not name: one object, so callers can tell nothing changed. */
const NO_OVERRIDES: JobOverrides = Object.freeze({});

function same(a: JobOverrides | undefined, b: JobOverrides | undefined): boolean {
  for (const f of SETTING_FIELDS) if (a?.[f] !== b?.[f]) return false;
  return true;
}

/** Options of {@link RedisSettings}. */
export interface RedisSettingsOptions {
  /** A `stats` connection. */
  readonly redis: RedisClient;
  /** `<prefix>:settings`. */
  readonly key: string;
  readonly logger: Logger;
  /** Called with each job id whose settings changed. */
  readonly onChange: (jobId: string) => void;
  /** Timers; default the system's. */
  readonly clock?: Timers;
}

/** A {@link SettingsSource} over the settings hash; see the module comment. */
export class RedisSettings implements SettingsSource {
  private values = new Map<string, JobOverrides>();
  private poll: Repeating | undefined;
  private loading: Promise<boolean> | undefined;
  private again = false;
  private failing = false;
  private polling = false;
  private watched = false;
  private corrupt: LeaseholdError | undefined;

  constructor(private readonly opts: RedisSettingsOptions) {}

  /** Why the settings hash cannot be read (`corruptSettings`: a value of another type at its key), or undefined. */
  get problem(): LeaseholdError | undefined {
    return this.corrupt;
  }

  /** The last known overrides of a job; never blocks, never throws. */
  get(jobId: string): JobOverrides {
    return this.values.get(jobId) ?? NO_OVERRIDES;
  }

  /** Reads the hash now (once more after a read in flight); resolves false when Redis failed. */
  load(): Promise<boolean> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = this.read().finally(() => {
      this.loading = undefined;
      if (this.again) {
        this.again = false;
        void this.load();
      }
    });
    return this.loading;
  }

  /** Starts polling. */
  start(): void {
    if (this.polling) return;
    this.polling = true;
    this.arm();
  }

  /**
   * Redis tells of every change of the hash from now on (true), or may not (false): the hash
   * is then read with each heartbeat, or every {@link SETTINGS_POLL_MS}. Becoming watched reads
   * it once, for what changed before the tracking began.
   */
  watching(on: boolean): void {
    if (on === this.watched) return;
    this.watched = on;
    if (on) void this.load();
    if (this.polling) this.arm();
  }

  /** The heartbeat's wake-up: while watched, the safety-net read (a change Redis failed to tell). */
  heartbeat(): void {
    if (this.polling && this.watched) void this.load();
  }

  /** Stops polling; waits at most `timeoutMs` for a read under way (a stalled Redis does not hold the stop). */
  async stop(timeoutMs: number): Promise<void> {
    this.polling = false;
    this.poll?.stop();
    this.poll = undefined;
    if (this.loading) await waitAtMost(this.opts.clock ?? systemClock, this.loading, timeoutMs, true);
  }

  /** Polls every {@link SETTINGS_POLL_MS} while not watched; while watched, has no timer. */
  private arm(): void {
    this.poll?.stop();
    this.poll = undefined;
    if (this.watched) return;
    this.poll = every(this.opts.clock ?? systemClock, SETTINGS_POLL_MS, () => void this.load());
  }

  private async read(): Promise<boolean> {
    if (this.opts.redis.status !== 'ready') return false;
    let hash: Record<string, string>;
    try {
      hash = await this.opts.redis.hgetall(this.opts.key);
    } catch (err) {
      if (isWrongType(err)) {
        await this.corrupted();
      } else if (!this.failing) {
        this.opts.logger.debug({ error: errorMessage(err) }, 'reading the settings hash failed; keeping the last known settings');
      }
      this.failing = true;
      return false;
    }
    this.failing = false;
    if (this.corrupt) {
      this.corrupt = undefined;
      this.opts.logger.info({ key: this.opts.key }, 'the settings hash %s can be read again', this.opts.key);
    }
    const next = parseSettings(hash);
    const previous = this.values;
    this.values = next;
    const changed = new Set<string>();
    for (const [id, o] of next) {
      const before = previous.get(id);
      // An unchanged job keeps its object: the runner re-resolves a schedule only for a new one.
      if (before !== undefined && same(o, before)) next.set(id, before);
      else changed.add(id);
    }
    for (const [id, o] of previous) if (!next.has(id) && !same(o, undefined)) changed.add(id);
    this.apply(changed);
    return true;
  }

  /** A value of another type at the settings key: said once at warn (until it can be read again). */
  private async corrupted(): Promise<void> {
    let problem: LeaseholdError;
    try {
      problem = await corruptSettings(this.opts.redis, this.opts.key);
    } catch (err) {
      this.opts.logger.debug({ error: errorMessage(err) }, 'reading the type of the settings hash failed; keeping the last known settings');
      return;
    }
    if (!this.corrupt) this.opts.logger.warn({ code: problem.code, key: this.opts.key }, '%s; keeping the last known settings', problem.message);
    this.corrupt = problem;
  }

  /** Tells `onChange` of each job whose settings changed. */
  private apply(changed: Set<string>): void {
    for (const id of changed) {
      try {
        this.opts.onChange(id);
      } catch (err) {
        this.opts.logger.error({ err, jobId: id }, 'applying new settings of %s failed', id);
      }
    }
  }
}
