/**
 * The runner core: the jobs of one node, their timetable, the fire policy (no overlap, no
 * burst, pause), runs as async calls with timeouts, installation claims through a
 * {@link Coordinator}, and a graceful stop. It emits lifecycle events; stats, metrics and
 * logs are listeners of those and the runner knows none of them.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { completeClock, waitAtMost, type Clock, type Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import { localCoordinator } from '../lease/local.js';
import type { ClaimMode, Coordinator, HeldLease } from '../lease/port.js';
import { normalizeJob, type JobScope, type NormalizedJob } from '../schedule/job.js';
import type { EffectiveSchedule, Trigger } from '../schedule/trigger.js';
import { Claims, type ClaimHost } from './claims.js';
import { Emitter, type JobState, type Listener, type RunnerEvents, type SkipReason } from './events.js';
import { executeRun, type ActiveRun } from './run.js';
import { Slot, type SettingsSource } from './slot.js';
import { Timetable, type TimetableHost } from './timetable.js';

export type { SettingsSource } from './slot.js';

/** What the runner needs; `createRunner` fills in defaults. */
export interface RunnerCoreOptions {
  readonly instanceId: string;
  readonly logger: Logger;
  readonly shutdownGraceMs: number;
  readonly clock?: Clock;
  readonly coordinator?: Coordinator;
  readonly settings?: SettingsSource;
}

/** A job as a runner knows it now: what `runner.add` and `runner.jobs()` answer. */
export interface JobInfo {
  /** The id. */
  readonly id: string;
  /** `instance` or `installation`. */
  readonly scope: JobScope;
  /** Free text from the job's definition. */
  readonly description: string | undefined;
  /** `ok`, `paused`, or `invalidSchedule` (see `invalidCause`). */
  readonly state: JobState;
  /** Why the schedule is invalid; undefined when it is valid. */
  readonly invalidCause: string | undefined;
  /** The schedule as it applies now (settings and environment applied); null while it is invalid. */
  readonly schedule: {
    readonly kind: 'cron' | 'fixedRate' | 'fixedDelay';
    /** The cron expression, or the period (`10s`). */
    readonly expression: string;
    /** The cron's zone; undefined for fixed schedules. */
    readonly zone: string | undefined;
    /** The nominal interval, ms. */
    readonly intervalMs: number;
  } | null;
  /** The next tick, epoch ms (shared clock); null when none is planned. */
  readonly nextDueAt: number | null;
  /** The run in progress on this node. */
  readonly running: { readonly runId: string; readonly startedAt: number; readonly aborted: string | undefined } | undefined;
}

/** The public view of a job from the runner's internal one. */
export function jobInfo(v: JobView): JobInfo {
  const t = v.schedule?.trigger;
  return {
    /** The id. */
    id: v.job.id,
    /** `instance` or `installation`. */
    scope: v.job.scope,
    /** Free text from the job's definition. */
    description: v.job.description,
    state: v.state,
    invalidCause: v.invalidCause,
    schedule: t ? { kind: t.kind, expression: t.expression, zone: t.zone, intervalMs: t.intervalMs } : null,
    nextDueAt: v.nextDueAt,
    running: v.running,
  };
}

/** A read-only view of a job the runner knows, with its definition and trigger (internal). */
export interface JobView {
  readonly job: NormalizedJob;
  readonly state: JobState;
  readonly invalidCause: string | undefined;
  readonly schedule: EffectiveSchedule | undefined;
  readonly nextDueAt: number | null;
  readonly running: { readonly runId: string; readonly startedAt: number; readonly aborted: string | undefined } | undefined;
}

/** How long after the shutdown grace aborted handlers get to settle, so their leases are released. */
const AFTER_ABORT_MS = 1_000;

/** The runner core. Create it with `createRunner`. */
export class RunnerCore implements TimetableHost, ClaimHost {
  readonly clock: Timers;
  readonly emitter: Emitter;
  readonly timetable: Timetable;
  private readonly claims: Claims;
  private readonly slots = new Map<string, Slot>();
  private readonly log: Logger;
  private settings: SettingsSource;
  private status: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  private stopping: Promise<void> | undefined;
  coordinator: Coordinator;

  constructor(private readonly opts: RunnerCoreOptions) {
    this.clock = completeClock(opts.clock);
    this.log = opts.logger;
    this.coordinator = opts.coordinator ?? localCoordinator(this.clock);
    this.settings = opts.settings ?? { get: () => ({}) };
    this.emitter = new Emitter((err, event) => this.log.error({ err, event }, 'a listener of %s threw', event));
    this.timetable = new Timetable(this);
    this.claims = new Claims(this);
  }

  /** This node's id. */
  get instanceId(): string {
    return this.opts.instanceId;
  }

  /** Whether `start()` has run and `stop()` has not begun. */
  get isRunning(): boolean {
    return this.status === 'running';
  }

  /** How long before a grid tick an installation claim may be sent. */
  get claimLeadMs(): number {
    return this.coordinator.claimLeadMs ?? 0;
  }

  /** Subscribes to a lifecycle event; returns an unsubscribe function. */
  on<K extends keyof RunnerEvents>(event: K, fn: Listener<K>): () => void {
    return this.emitter.on(event, fn);
  }

  /** Replaces the coordinator (before start). */
  setCoordinator(c: Coordinator): void {
    this.coordinator = c;
  }

  /** Replaces the settings source (before start). */
  setSettings(s: SettingsSource): void {
    this.settings = s;
  }

  /** The current time on the shared clock (Redis time when coordinated). */
  now(): number {
    return this.clock.now() + this.coordinator.offsetMs();
  }

  /**
   * Adds a job (a `defineJob` result or a plain object of the same shape).
   * @throws LeaseholdError naming the job and the field when the definition is wrong or the id is taken.
   */
  add(definition: unknown): JobView {
    if (this.status === 'stopping' || this.status === 'stopped') {
      throw new LeaseholdError(ErrorCodes.invalidState, 'cannot add a job to a runner that is stopping or stopped');
    }
    const job = normalizeJob(definition);
    if (this.slots.has(job.id)) {
      throw new LeaseholdError(ErrorCodes.duplicateJob, `job ${JSON.stringify(job.id)}: field "id": another job has the same id`);
    }
    const slot = new Slot(job);
    this.slots.set(job.id, slot);
    if (this.status === 'running') this.planFirst(slot);
    return view(slot);
  }

  /** Every job's current view. */
  jobs(): JobView[] {
    return [...this.slots.values()].map((s) => view(s));
  }

  /** One job's view, or undefined. */
  job(id: string): JobView | undefined {
    const s = this.slots.get(id);
    return s ? view(s) : undefined;
  }

  /** The nominal interval of a job's schedule as it applies now (cheap; no view is built). */
  intervalOf(id: string): number | undefined {
    return this.slots.get(id)?.effective?.trigger.intervalMs;
  }

  /** The trigger of a job's schedule as it applies now (cheap; no view is built). */
  triggerOf(id: string): Trigger | undefined {
    return this.slots.get(id)?.effective?.trigger;
  }

  /** Starts the timer. */
  start(): void {
    if (this.status !== 'idle') throw new LeaseholdError(ErrorCodes.invalidState, `runner is ${this.status}; start() runs once`);
    this.status = 'running';
    for (const slot of this.slots.values()) this.planFirst(slot);
  }

  /**
   * Re-reads a job's settings now (after a change in the settings hash): a pause applies at
   * once, a new schedule replaces the pending fire.
   */
  refresh(jobId: string): void {
    const slot = this.slots.get(jobId);
    if (!slot || this.status !== 'running') return;
    const { paused, invalidCause } = slot;
    const before = slot.effective?.trigger.key;
    slot.resolve(this.settings, this.emitter, this.log);
    if (slot.paused !== paused || slot.effective?.trigger.key !== before || slot.invalidCause !== invalidCause) {
      if (!slot.running || slot.effective?.trigger.kind !== 'fixedDelay') this.timetable.planNext(slot, this.now(), true);
    }
  }

  /**
   * Starts a run of the job now, outside its schedule (an operator's "run now"). For an
   * installation job the claim still applies: it runs on one node, never beside a run.
   * @returns false when the job is unknown, running, or the runner is not running.
   */
  runNow(jobId: string): boolean {
    const slot = this.slots.get(jobId);
    if (!slot || this.status !== 'running' || slot.busy || !slot.effective) return false;
    this.begin(slot, slot.effective, this.now(), 'manual');
    return true;
  }

  /**
   * Stops: the timer first so no run begins, then waits up to the grace for runs in
   * progress, then aborts the rest with reason `shutdown` (recorded as `interrupted`).
   */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    this.status = 'stopping';
    this.timetable.clear();
    const runs = (): ActiveRun[] => [...this.slots.values()].flatMap((s) => (s.running ? [s.running] : []));
    const settled = (): Promise<unknown> => Promise.all([this.claims.settled(), ...runs().map((r) => r.settled)]);
    await waitAtMost(this.clock, settled(), this.opts.shutdownGraceMs);
    if (runs().length > 0) {
      for (const run of runs()) run.abort(ErrorCodes.shutdown);
      await waitAtMost(this.clock, settled(), AFTER_ABORT_MS);
      for (const run of runs()) run.reportNow();
    }
    this.status = 'stopped';
    await this.coordinator.close();
  }

  private planFirst(slot: Slot): void {
    slot.anchor = this.now() + slot.job.initialDelayMs;
    slot.resolve(this.settings, this.emitter, this.log);
    this.timetable.planFirst(slot);
  }

  // ---- the fire policy --------------------------------------------------------------------

  /** A job's tick is due: resolve its settings, plan the next fire, then run, skip or claim. */
  fire(slot: Slot, tick: number, now: number): void {
    if (now < tick && slot.busy) {
      // Fired ahead for its claim, but the previous run is still going: decide on the tick.
      this.timetable.at(slot, tick, tick);
      return;
    }
    this.timetable.dropRetry(slot); // a new tick supersedes any retry of an older one
    const before = slot.effective?.trigger.key;
    slot.resolve(this.settings, this.emitter, this.log);
    const eff = slot.effective;
    if (slot.invalidCause || !eff) {
      this.timetable.planNext(slot, now);
      return;
    }
    const t = eff.trigger;
    if (t.key !== before && t.kind !== 'fixedDelay') {
      // The cadence changed since this fire was planned: follow the new schedule.
      const next = t.next(now - 1);
      if (next !== tick) {
        this.timetable.tick(slot, next);
        return;
      }
    }
    if (t.kind !== 'fixedDelay') this.timetable.planNext(slot, Math.max(now, tick));
    else slot.nextAt = null;
    if (slot.paused) {
      this.skip(slot, 'paused', tick, now);
      if (t.kind === 'fixedDelay') this.timetable.tick(slot, now + t.intervalMs);
      return;
    }
    if (slot.busy) {
      this.skip(slot, 'overrun', tick, now);
      return;
    }
    this.begin(slot, eff, tick, t.kind === 'fixedDelay' ? 'delay' : 'grid');
  }

  /** A claim found the lease held by an earlier run: try again within the misfire grace. */
  retry(slot: Slot, tick: number, mode: ClaimMode): void {
    if (slot.busy || slot.paused || !slot.effective) return;
    this.begin(slot, slot.effective, tick, mode);
  }

  /** The claims of the jobs due at one wake travel together, and leave before anything else. */
  afterWake(): void {
    this.coordinator.flush?.();
  }

  skip(slot: Slot, reason: SkipReason, tick: number, now: number, recorded = false): void {
    this.emitter.emit('skipped', { jobId: slot.job.id, scope: slot.job.scope, instanceId: this.instanceId, reason, scheduledAt: tick, at: now, recorded });
  }

  /** Starts a run for `tick`: at once for an instance job, after its claim for an installation job. */
  private begin(slot: Slot, eff: EffectiveSchedule, tick: number, mode: ClaimMode): void {
    if (slot.job.scope === 'instance') this.startRun(slot, eff, tick, mode === 'manual', undefined);
    else this.claims.claim(slot, eff, tick, mode);
  }

  startRun(slot: Slot, eff: EffectiveSchedule, tick: number, manual: boolean, lease: HeldLease | undefined): void {
    const run = executeRun({
      job: slot.job,
      tick,
      manual,
      timeoutMs: eff.timeoutMs,
      leaseMs: eff.leaseMs,
      lease,
      instanceId: this.instanceId,
      logger: this.log,
      clock: this.clock,
      now: () => this.now(),
      emitter: this.emitter,
      delayAfterMs: eff.trigger.kind === 'fixedDelay' ? eff.trigger.intervalMs : undefined,
    });
    slot.running = run;
    void run.settled.then(() => {
      if (slot.running === run) slot.running = undefined;
      const current = slot.effective?.trigger;
      // fixedDelay: the next start is the delay after this end (for an installation job the
      // claim compares it with the cluster's due time kept in Redis).
      if (this.status === 'running' && current?.kind === 'fixedDelay') this.timetable.tick(slot, this.now() + current.intervalMs);
    });
  }
}

function view(s: Slot): JobView {
  return {
    job: s.job,
    state: s.state,
    invalidCause: s.invalidCause,
    schedule: s.effective,
    nextDueAt: s.nextAt,
    running: s.running ? { runId: s.running.runId, startedAt: s.running.startedAt, aborted: s.running.abortedReason } : undefined,
  };
}
