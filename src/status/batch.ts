/**
 * One job's not-yet-written stats: run outcomes, skips and missed ticks merged into a
 * bounded batch, and turned into what `record.lua` applies. Pure: no I/O.
 * @module
 */
import { countsInStreak, type RunEndedEvent, type RunOutcome, type SkippedEvent } from '../runner/events.js';
import type { LeaseLostRun, RecordBatch } from '../redis/record.js';

/** Longest `lastError` (and run error) kept, in characters. */
const MAX_ERROR_LENGTH = 1_000;

/** One entry of the recent-runs list (`<prefix>:{<jobId>}:runs`), as stored (JSON). */
export interface RecentRun {
  /** How the run ended. */
  readonly outcome: RunOutcome;
  /** The node that ran it. */
  readonly instance: string;
  /** ISO-8601. */
  readonly scheduledAt: string;
  /** ISO-8601. */
  readonly startedAt: string;
  /** How long the run took, ms. */
  readonly durationMs: number;
  /** The error's message, for unsuccessful runs. */
  readonly error: string | null;
  /** The claim's fencing token (installation jobs). */
  readonly fencingToken: number | null;
  /** True for a run an operator started. */
  readonly manual: boolean;
  /** Which attempt at the tick it was (1, or more for a retry). */
  readonly attempt: number;
}

/** ISO-8601 text of epoch ms, or '' for null. */
export function iso(ms: number | null | undefined): string {
  return ms === null || ms === undefined || !Number.isFinite(ms) ? '' : new Date(ms).toISOString();
}

function clip(text: string | undefined): string {
  if (text === undefined) return '';
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

function add(counters: Record<string, number>, field: string, n = 1): void {
  counters[field] = (counters[field] ?? 0) + n;
}

/**
 * The start or the end of an installation job's failing streak, decided on the cluster's
 * streak (the stats hash's) by the node whose stats write saw it: logged once for the
 * installation.
 */
export type StreakChange =
  | { readonly kind: 'failed'; readonly run: RunEndedEvent }
  | { readonly kind: 'recovered'; readonly run: RunEndedEvent; readonly failedRuns: number };

/**
 * What a batch's runs do to the failing streak, in order, kept bounded: the first unsuccessful
 * run before any success, how many came before the first success, that success, and the first
 * unsuccessful run after the last success.
 */
export class StreakRuns {
  private firstFailure: RunEndedEvent | undefined;
  private failsBefore = 0;
  private firstSuccess: RunEndedEvent | undefined;
  private failureAfter: RunEndedEvent | undefined;

  /** Adds a run that counts for the streak (neither interrupted nor cancelled). */
  add(e: RunEndedEvent): void {
    if (e.outcome === 'succeeded') {
      this.firstSuccess ??= e;
      this.failureAfter = undefined;
    } else if (this.firstSuccess === undefined) {
      this.firstFailure ??= e;
      this.failsBefore += 1;
    } else {
      this.failureAfter ??= e;
    }
  }

  /** The changes these runs make to a streak that was `before` (the stats hash's, before the batch). */
  changes(before: number): StreakChange[] {
    const out: StreakChange[] = [];
    if (this.firstFailure && before === 0) out.push({ kind: 'failed', run: this.firstFailure });
    if (this.firstSuccess && before + this.failsBefore > 0) out.push({ kind: 'recovered', run: this.firstSuccess, failedRuns: before + this.failsBefore });
    if (this.failureAfter) out.push({ kind: 'failed', run: this.failureAfter });
    return out;
  }
}

const SKIP_FIELD = { overrun: 'overruns', claimed: 'skippedClaimed', paused: 'skippedPaused' } as const;

/** A job's pending stats. Its size does not grow with the number of events merged. */
export class JobBatch {
  private init = false;
  private createdAt: string | undefined;
  private define: Record<string, string> | undefined;
  private readonly incr: Record<string, number> = {};
  private readonly set: Record<string, string> = {};
  private last: { startedAt: number; fields: Record<string, string> } | undefined;
  private successAtMs = -1;
  private fails = 0;
  private readonly instIncr: Record<string, number> = {};
  private readonly instSet: Record<string, string> = {};
  private instLast: Record<string, string> | undefined;
  private readonly runs: string[] = [];
  /** Runs a claim may have recorded lost already, each on its own: counted once per run. */
  private readonly leaseLost: LeaseLostRun[] = [];
  private empty = true;
  /** An installation job's runs as they count for the failing streak (for its log lines). */
  readonly streak: StreakRuns | undefined;

  /**
   * @param instanceScoped - whether the job runs on every instance (keeps per-instance rows).
   * @param runsCap - how many recent runs to keep (older ones are dropped when merging).
   */
  constructor(
    private readonly instanceScoped: boolean,
    private readonly runsCap: number,
  ) {
    this.streak = instanceScoped ? undefined : new StreakRuns();
  }

  /** True when there is nothing to write. */
  get isEmpty(): boolean {
    return this.empty;
  }

  /** How many runs (ticks, by their final attempts) it counts, the runs whose lease was lost too. */
  get runCount(): number {
    return (this.incr['runs'] ?? 0) + this.leaseLost.length;
  }

  /** Whether it adds to any counter (runs, skips, missed ticks). */
  get counts(): boolean {
    return Object.keys(this.incr).length > 0 || this.leaseLost.length > 0;
  }

  /** Asks for every field to be created (zeros and '') and the job's description to be written. */
  initialize(define: Record<string, string>, createdAt: string): void {
    this.init = true;
    this.createdAt = createdAt;
    this.define = { ...this.define, ...define };
    this.empty = false;
  }

  /** Replaces description fields (scope, schedule ...). */
  describe(define: Record<string, string>): void {
    this.define = { ...this.define, ...define };
    this.empty = false;
  }

  /**
   * Sets a field of the stats hash (and of this instance's row with `alsoInstance`). A `soft`
   * field does not make a write of its own: it goes with the job's next write.
   */
  setField(field: string, value: string, alsoInstance = false, soft = false): void {
    this.set[field] = value;
    if (alsoInstance && this.instanceScoped) this.instSet[field] = value;
    if (!soft) this.empty = false;
  }

  /**
   * Adds a finished run. An attempt that is retried on the same tick goes to the recent runs
   * only: the counters, the last outcome and the failing streak count each tick by its final
   * attempt.
   */
  addRun(e: RunEndedEvent): void {
    this.empty = false;
    if (e.leaseLost && !e.willRetry) {
      // Another node may have recorded this run lost already: Redis decides (record.lua).
      const one = new JobBatch(false, 1);
      one.addRun({ ...e, leaseLost: false });
      const { incr, last, fails, runs } = one.toRecord('');
      const which = e.fencingToken !== undefined ? { token: e.fencingToken } : { tick: e.scheduledAt, holder: e.instanceId, ...(e.manual ? { manual: true } : {}) };
      this.leaseLost.push({ ...which, ...(incr ? { incr } : {}), ...(last ? { last } : {}), ...(fails ? { fails } : {}), ...(runs ? { runs } : {}) });
      if (this.leaseLost.length > this.runsCap) this.leaseLost.splice(0, this.leaseLost.length - this.runsCap);
      return;
    }
    if (e.willRetry) {
      this.addRecent(e, clip(e.error));
      return;
    }
    add(this.incr, 'runs');
    add(this.incr, e.outcome);
    if (e.outcome === 'succeeded') {
      if (e.endedAt >= this.successAtMs) {
        this.successAtMs = e.endedAt;
        this.fails = 0;
      }
    } else if (countsInStreak(e.outcome)) {
      this.fails += 1;
    }
    if (countsInStreak(e.outcome)) this.streak?.add(e);
    const error = clip(e.error);
    const fields = {
      lastOutcome: e.outcome,
      lastError: error,
      lastStartedAt: iso(e.startedAt),
      lastDurationMs: String(Math.round(e.durationMs)),
      lastInstance: e.instanceId,
    };
    if (!this.last || e.startedAt >= this.last.startedAt) this.last = { startedAt: e.startedAt, fields };
    if (this.instanceScoped) {
      add(this.instIncr, 'runs');
      add(this.instIncr, e.outcome);
      const { lastInstance: _ignored, ...own } = fields;
      this.instLast = own;
    }
    this.addRecent(e, error);
  }

  private addRecent(e: RunEndedEvent, error: string): void {
    const run: RecentRun = {
      outcome: e.outcome,
      instance: e.instanceId,
      scheduledAt: iso(e.scheduledAt),
      startedAt: iso(e.startedAt),
      durationMs: Math.round(e.durationMs),
      error: e.error === undefined ? null : error,
      fencingToken: e.fencingToken ?? null,
      manual: e.manual,
      attempt: e.attempt,
    };
    this.runs.push(JSON.stringify(run));
    if (this.runs.length > this.runsCap) this.runs.splice(0, this.runs.length - this.runsCap);
  }

  /** Adds a start that did not happen. */
  addSkip(e: SkippedEvent): void {
    this.empty = false;
    add(this.incr, 'skipped');
    add(this.incr, SKIP_FIELD[e.reason]);
    if (this.instanceScoped) {
      add(this.instIncr, 'skipped');
      if (e.reason === 'overrun') add(this.instIncr, 'overruns');
    }
  }

  /** Adds ticks that no node ran. */
  addMissed(count: number): void {
    if (!(count > 0)) return;
    this.empty = false;
    add(this.incr, 'missed', Math.round(count));
  }

  /** What `record.lua` applies, with this node's instance id for per-instance rows. */
  toRecord(instanceId: string): RecordBatch {
    const out: RecordBatch = {};
    if (this.init) {
      out.init = true;
      if (this.createdAt !== undefined) out.createdAt = this.createdAt;
    }
    if (this.define) out.define = this.define;
    if (Object.keys(this.incr).length > 0) out.incr = this.incr;
    if (this.last) out.last = this.last.fields;
    if (this.successAtMs >= 0) out.successAt = iso(this.successAtMs);
    if (this.fails > 0) out.fails = this.fails;
    if (Object.keys(this.set).length > 0) out.set = this.set;
    if (this.instanceScoped) {
      out.inst = { id: instanceId, incr: this.instIncr, set: this.instSet, ...(this.instLast ? { last: this.instLast } : {}) };
    }
    if (this.runs.length > 0) out.runs = this.runs;
    if (this.leaseLost.length > 0) out.leaseLost = this.leaseLost;
    return out;
  }
}
