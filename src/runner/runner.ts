/**
 * The runner: one timer over a min-heap of next fires, runs as async calls, no overlap,
 * timeouts, installation claims through a {@link Coordinator}, and a graceful stop.
 * @module
 */
import type { Logger } from '../logger.js';
import { LeaseholdError, errorMessage } from '../errors.js';
import { isEnvSetting, normalizeJob, type NormalizedJob } from '../schedule/job.js';
import { resolveSchedule, type EffectiveSchedule, type JobOverrides, type Trigger } from '../schedule/trigger.js';
import { completeClock, MAX_TIMER_MS, type Clock, type TimerHandle } from '../clock.js';
import { localCoordinator } from '../lease/local.js';
import type { ClaimMode, Coordinator, HeldLease } from '../lease/port.js';
import { Emitter, type JobState, type Listener, type RunnerEvents, type SkipReason } from './events.js';
import { MinHeap } from './heap.js';
import { executeRun, type ActiveRun } from './run.js';

/** Missed cron ticks are counted one by one up to this many; a longer gap is estimated. */
export const MISSED_WALK_LIMIT = 1_000;
/** An invalid schedule is checked again this often. */
export const RECHECK_INVALID_MS = 60_000;

/**
 * Where the runner reads per-job overrides (the settings hash, through the status layer).
 * `get` answers a new object when a job's overrides change: the runner re-resolves a schedule
 * only when it gets a different object (or the schedule reads the environment).
 */
export interface SettingsSource {
  get(jobId: string): JobOverrides;
}

/** What the runner needs; `createRunner` fills in defaults. */
export interface RunnerCoreOptions {
  readonly instanceId: string;
  readonly logger: Logger;
  readonly shutdownGraceMs: number;
  readonly clock?: Clock;
  readonly coordinator?: Coordinator;
  readonly settings?: SettingsSource;
}

/** A read-only view of a job the runner knows. */
export interface JobView {
  readonly job: NormalizedJob;
  readonly state: JobState;
  readonly invalidCause: string | undefined;
  readonly schedule: EffectiveSchedule | undefined;
  readonly nextDueAt: number | null;
  readonly running: { readonly runId: string; readonly startedAt: number; readonly aborted: string | undefined } | undefined;
}

interface Entry {
  readonly at: number;
  readonly seq: number;
  readonly jobId: string;
  readonly kind: 'fire' | 'retry';
  readonly tick: number;
  readonly mode: ClaimMode;
}

interface Slot {
  readonly job: NormalizedJob;
  effective: EffectiveSchedule | undefined;
  invalidCause: string | undefined;
  paused: boolean;
  /** Grid anchor for an instance fixedRate job. */
  anchor: number;
  fireSeq: number;
  retrySeq: number;
  nextAt: number | null;
  running: ActiveRun | undefined;
  warned: Set<string>;
  /** The overrides the schedule was last resolved with. */
  overrides: JobOverrides | undefined;
  /** Whether the declared schedule reads the environment (then it is resolved at every fire). */
  readonly readsEnv: boolean;
}

/**
 * What holds a slot while its claim is in flight, so nothing overlaps it. `settled` (made only
 * when a stop asks for it) resolves once the claim's answer is handled.
 */
class Claiming implements ActiveRun {
  readonly abortedReason = undefined;
  private done = false;
  private resolve: (() => void) | undefined;
  private promise: Promise<void> | undefined;

  constructor(
    private readonly tick: number,
    readonly startedAt: number,
  ) {}

  get runId(): string {
    return `claim-${this.tick}`;
  }

  get settled(): Promise<void> {
    this.promise ??= this.done ? Promise.resolve() : new Promise<void>((resolve) => (this.resolve = resolve));
    return this.promise;
  }

  handled(): void {
    this.done = true;
    this.resolve?.();
  }

  abort(): void {}

  reportNow(): void {}
}

/** The runner core. Create it with `createRunner`. */
export class RunnerCore {
  private readonly clock: Required<Clock>;
  private readonly slots = new Map<string, Slot>();
  private readonly heap = new MinHeap<Entry>();
  private readonly emitter: Emitter;
  private readonly log: Logger;
  private coordinator: Coordinator;
  private settings: SettingsSource;
  private seq = 0;
  private timer: TimerHandle | undefined;
  private timerAt = Infinity;
  private status: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  private stopping: Promise<void> | undefined;
  /** Waits for ticks whose claims came back early, one per tick. */
  private readonly tickWaits = new Map<number, Promise<void>>();

  constructor(private readonly opts: RunnerCoreOptions) {
    this.clock = completeClock(opts.clock);
    this.log = opts.logger;
    this.coordinator = opts.coordinator ?? localCoordinator(this.clock);
    this.settings = opts.settings ?? { get: () => ({}) };
    this.emitter = new Emitter((err, event) => this.log.error({ err, event }, 'a listener of %s threw', event));
  }

  /** This node's id. */
  get instanceId(): string {
    return this.opts.instanceId;
  }

  /** Whether `start()` has run and `stop()` has not begun. */
  get isRunning(): boolean {
    return this.status === 'running';
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
  add(definition: unknown): NormalizedJob {
    if (this.status === 'stopping' || this.status === 'stopped') {
      throw new LeaseholdError('INVALID_STATE', 'cannot add a job to a runner that is stopping or stopped');
    }
    const job = normalizeJob(definition);
    if (this.slots.has(job.id)) {
      throw new LeaseholdError('DUPLICATE_JOB', `job ${JSON.stringify(job.id)}: field "id": another job has the same id`);
    }
    const slot: Slot = {
      job,
      effective: undefined,
      invalidCause: undefined,
      paused: false,
      anchor: 0,
      fireSeq: 0,
      retrySeq: 0,
      nextAt: null,
      running: undefined,
      warned: new Set(),
      overrides: undefined,
      readsEnv: isEnvSetting(job.schedule.value) || (job.schedule.kind === 'cron' && isEnvSetting(job.schedule.zone)),
    };
    this.slots.set(job.id, slot);
    if (this.status === 'running') this.planFirst(slot);
    return job;
  }

  /** Every job's current view. */
  jobs(): JobView[] {
    return [...this.slots.values()].map((s) => this.view(s));
  }

  /** The nominal interval of a job's schedule as it applies now (cheap; no view is built). */
  intervalOf(id: string): number | undefined {
    return this.slots.get(id)?.effective?.trigger.intervalMs;
  }

  /** The trigger of a job's schedule as it applies now (cheap; no view is built). */
  triggerOf(id: string): Trigger | undefined {
    return this.slots.get(id)?.effective?.trigger;
  }

  /** One job's view, or undefined. */
  job(id: string): JobView | undefined {
    const s = this.slots.get(id);
    return s ? this.view(s) : undefined;
  }

  /** Starts the timer. */
  start(): void {
    if (this.status !== 'idle') throw new LeaseholdError('INVALID_STATE', `runner is ${this.status}; start() runs once`);
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
    const wasPaused = slot.paused;
    const before = slot.effective?.trigger.key;
    const wasInvalid = slot.invalidCause;
    this.resolve(slot);
    if (slot.paused !== wasPaused || slot.effective?.trigger.key !== before || slot.invalidCause !== wasInvalid) {
      if (!slot.running || slot.effective?.trigger.kind !== 'fixedDelay') this.planNext(slot, this.now(), true);
    }
  }

  /**
   * Starts a run of the job now, outside its schedule (an operator's "run now"). For an
   * installation job the claim still applies: it runs on one node, never beside a run.
   * @returns false when the job is unknown, running, or the runner is not running.
   */
  runNow(jobId: string): boolean {
    const slot = this.slots.get(jobId);
    if (!slot || this.status !== 'running' || slot.running || !slot.effective) return false;
    const now = this.now();
    void this.begin(slot, now, 'manual');
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
    this.disarm();
    this.heap.clear();
    const runs = () => [...this.slots.values()].flatMap((s) => (s.running ? [s.running] : []));
    if (runs().length > 0) {
      await this.sleepUntilSettled(runs(), this.opts.shutdownGraceMs);
      for (const run of runs()) run.abort('shutdown');
      // Give aborted handlers a moment to settle so their leases are released.
      await this.sleepUntilSettled(runs(), 1_000);
      for (const run of runs()) run.reportNow();
    }
    this.status = 'stopped';
    await this.coordinator.close();
  }

  private sleepUntilSettled(runs: ActiveRun[], ms: number): Promise<void> {
    return new Promise((resolve) => {
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        clearTimeout(t);
        resolve();
      };
      const t = setTimeout(finish, ms);
      void Promise.allSettled(runs.map((r) => r.settled)).then(finish);
    });
  }

  // ---- timetable ------------------------------------------------------------------------

  private view(s: Slot): JobView {
    const state: JobState = s.invalidCause ? 'invalidSchedule' : s.paused ? 'paused' : 'ok';
    return {
      job: s.job,
      state,
      invalidCause: s.invalidCause,
      schedule: s.effective,
      nextDueAt: s.nextAt,
      running: s.running ? { runId: s.running.runId, startedAt: s.running.startedAt, aborted: s.running.abortedReason } : undefined,
    };
  }

  /** Applies settings to a slot; emits state changes and warnings. */
  private resolve(slot: Slot): void {
    const id = slot.job.id;
    const overrides = this.safeSettings(id);
    // The same overrides object and no environment setting: nothing can have changed.
    if (overrides === slot.overrides && !slot.readsEnv && slot.effective !== undefined && slot.invalidCause === undefined) return;
    slot.overrides = overrides;
    const prevState: JobState = slot.invalidCause ? 'invalidSchedule' : slot.paused ? 'paused' : 'ok';
    const prevCause = slot.invalidCause;
    const paused = overrides.paused?.trim().toLowerCase();
    if (paused !== undefined && paused !== '' && paused !== 'true' && paused !== 'false') {
      this.warnOnce(slot, `settings: ${id}.paused is ${JSON.stringify(overrides.paused)}; expected true or false, ignored`);
    } else {
      slot.paused = paused === 'true';
    }
    try {
      const anchor = slot.job.scope === 'installation' ? 0 : slot.anchor;
      slot.effective = resolveSchedule(slot.job, overrides, anchor, slot.effective?.trigger);
      slot.invalidCause = undefined;
      for (const w of slot.effective.warnings) this.warnOnce(slot, `settings: ${w}`);
    } catch (err) {
      slot.invalidCause = errorMessage(err);
    }
    const state: JobState = slot.invalidCause ? 'invalidSchedule' : slot.paused ? 'paused' : 'ok';
    const causeChanged = state === 'invalidSchedule' && slot.invalidCause !== prevCause;
    if (state !== prevState || causeChanged) {
      this.emitter.emit('jobState', { jobId: id, state, cause: slot.invalidCause });
    }
  }

  private safeSettings(id: string): JobOverrides {
    try {
      return this.settings.get(id);
    } catch (err) {
      this.log.warn({ err, jobId: id }, 'reading settings failed; using the declared schedule');
      return {};
    }
  }

  private warnOnce(slot: Slot, message: string): void {
    if (slot.warned.has(message)) return;
    slot.warned.add(message);
    this.emitter.emit('warning', { jobId: slot.job.id, message });
  }

  private planFirst(slot: Slot): void {
    const now = this.now();
    slot.anchor = now + slot.job.initialDelayMs;
    this.resolve(slot);
    const eff = slot.effective;
    if (slot.invalidCause || !eff) {
      this.schedule(slot, now + RECHECK_INVALID_MS, now + RECHECK_INVALID_MS);
      return;
    }
    const t = eff.trigger;
    if (t.kind === 'cron') {
      this.scheduleTick(slot, t.next(now));
    } else if (t.kind === 'fixedRate' && slot.job.scope === 'installation') {
      // The shared grid: with an initial delay wait for the first tick after it; without,
      // take the current period's tick if nobody ran it (the claim decides).
      const from = now + slot.job.initialDelayMs;
      const next = t.next(from - 1) ?? from; // first grid tick at or after `from`
      this.scheduleTick(slot, slot.job.initialDelayMs > 0 || next === from ? next : next - t.intervalMs);
    } else {
      this.scheduleTick(slot, now + slot.job.initialDelayMs);
    }
  }

  /** Schedules the next fire after `after` from the slot's trigger (grid jobs), or a recheck. */
  private planNext(slot: Slot, after: number, replace = false): void {
    const eff = slot.effective;
    if (slot.invalidCause || !eff) {
      this.schedule(slot, after + RECHECK_INVALID_MS, after + RECHECK_INVALID_MS);
      return;
    }
    if (eff.trigger.kind === 'fixedDelay') {
      if (replace) this.scheduleTick(slot, after + eff.trigger.intervalMs);
      return;
    }
    this.scheduleTick(slot, eff.trigger.next(after));
  }

  private scheduleTick(slot: Slot, tick: number | null): void {
    if (tick === null) {
      slot.fireSeq = ++this.seq;
      slot.nextAt = null;
      this.emitter.emit('scheduled', { jobId: slot.job.id, nextDueAt: null });
      return;
    }
    this.schedule(slot, tick - this.leadMs(slot), tick);
  }

  /**
   * How early a tick fires: an installation job on a grid (cron, fixedRate) sends its claim
   * the coordinator's lead ahead of the tick, at most a quarter of its interval; its run still
   * starts on the tick. Everything else fires on the tick.
   */
  private leadMs(slot: Slot): number {
    const lead = this.coordinator.claimLeadMs ?? 0;
    const trigger = slot.effective?.trigger;
    if (lead <= 0 || slot.job.scope !== 'installation' || !trigger || trigger.kind === 'fixedDelay') return 0;
    return Math.min(lead, Math.floor(trigger.intervalMs / 4));
  }

  private schedule(slot: Slot, at: number, tick: number, kind: 'fire' | 'retry' = 'fire', mode: ClaimMode = 'grid'): void {
    if (this.status !== 'running') return;
    const seq = ++this.seq;
    if (kind === 'fire') {
      slot.fireSeq = seq;
      slot.nextAt = tick;
      this.emitter.emit('scheduled', { jobId: slot.job.id, nextDueAt: tick });
    } else {
      slot.retrySeq = seq;
    }
    this.heap.push({ at, seq, jobId: slot.job.id, kind, tick, mode });
    if (at < this.timerAt) this.arm();
  }

  private arm(): void {
    this.disarm();
    const top = this.heap.peek();
    if (!top || this.status !== 'running') return;
    const delay = Math.max(0, Math.min(top.at - this.now(), MAX_TIMER_MS));
    this.timerAt = this.now() + delay;
    this.timer = this.clock.setTimer(() => this.onTimer(), delay);
  }

  private disarm(): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private onTimer(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.now();
    for (let top = this.heap.peek(); top && top.at <= now; top = this.heap.peek()) {
      this.heap.pop();
      const slot = this.slots.get(top.jobId);
      if (!slot) continue;
      if (top.kind === 'fire' && top.seq === slot.fireSeq) this.fire(slot, top.tick, now);
      else if (top.kind === 'retry' && top.seq === slot.retrySeq) this.retry(slot, top.tick, top.mode);
    }
    // The claims of the jobs due now travel together, and leave before anything else is done.
    this.coordinator.flush?.();
    this.arm();
  }

  private fire(slot: Slot, tick: number, now: number): void {
    if (now < tick && slot.running) {
      // Fired ahead for its claim, but the previous run is still going: decide on the tick.
      this.schedule(slot, tick, tick);
      return;
    }
    slot.retrySeq = ++this.seq; // a new tick supersedes any retry of an older one
    const before = slot.effective?.trigger.key;
    this.resolve(slot);
    const eff = slot.effective;
    if (slot.invalidCause || !eff) {
      this.planNext(slot, now);
      return;
    }
    if (eff.trigger.key !== before && eff.trigger.kind !== 'fixedDelay') {
      // The cadence changed since this fire was planned: follow the new schedule.
      const next = eff.trigger.next(now - 1);
      if (next !== tick) {
        this.scheduleTick(slot, next);
        return;
      }
    }
    if (eff.trigger.kind !== 'fixedDelay') this.planNext(slot, Math.max(now, tick));
    else slot.nextAt = null;
    if (slot.paused) {
      this.skip(slot, 'paused', tick, now);
      if (eff.trigger.kind === 'fixedDelay') this.scheduleTick(slot, now + eff.trigger.intervalMs);
      return;
    }
    if (slot.running) {
      this.skip(slot, 'overrun', tick, now);
      return;
    }
    void this.begin(slot, tick, eff.trigger.kind === 'fixedDelay' ? 'delay' : 'grid');
  }

  /** A claim found the lease held by an earlier run: try again within the misfire grace. */
  private retry(slot: Slot, tick: number, mode: ClaimMode): void {
    if (slot.running || slot.paused || !slot.effective) return;
    void this.begin(slot, tick, mode);
  }

  private skip(slot: Slot, reason: SkipReason, tick: number, now: number, recorded = false): void {
    this.emitter.emit('skipped', { jobId: slot.job.id, scope: slot.job.scope, instanceId: this.instanceId, reason, scheduledAt: tick, at: now, recorded });
  }

  private graceMs(slot: Slot, eff: EffectiveSchedule): number {
    return slot.job.misfireGraceMs ?? Math.min(eff.leaseMs, eff.trigger.intervalMs);
  }

  /** Claims (installation jobs) and starts a run for `tick`. */
  private async begin(slot: Slot, tick: number, mode: ClaimMode): Promise<void> {
    const eff = slot.effective;
    if (!eff) return;
    if (slot.job.scope === 'instance') {
      this.startRun(slot, eff, tick, mode === 'manual', undefined);
      return;
    }
    // Reserve the slot while the claim is in flight so nothing overlaps it; a stop waits for it.
    // The catch-up tick of a fixedRate job at start is no skip when someone ran it.
    const catchUp = mode === 'grid' && tick < slot.anchor - slot.job.initialDelayMs;
    const claim = this.coordinator.claim({ jobId: slot.job.id, tick, leaseMs: eff.leaseMs, mode, countSkip: !catchUp && mode !== 'manual' });
    // `settled` resolves once the answer is handled (a lease won while stopping is released
    // and its tick counted), so a stop waits for that before closing the connections.
    const claiming = new Claiming(tick, this.now());
    slot.running = claiming;
    let decision;
    try {
      decision = await claim;
    } catch (err) {
      if (slot.running === claiming) slot.running = undefined;
      this.claimFailed(slot, tick, mode === 'manual', err);
      claiming.handled();
      return;
    }
    // A claim sent ahead of its tick: the run starts on the tick, never before it.
    const early = decision.kind === 'claimed' ? this.untilTick(tick) : undefined;
    if (early) await early;
    if (slot.running === claiming) slot.running = undefined;
    if (this.status !== 'running') {
      if (decision.kind === 'claimed') {
        // Stopping: no run begins, and the tick this claim took will not run anywhere now.
        if (mode !== 'manual') this.emitter.emit('missed', { jobId: slot.job.id, count: 1, afterTick: decision.previousTick ?? tick, beforeTick: tick });
        await decision.lease.release(undefined).catch(() => false);
      }
      claiming.handled();
      return;
    }
    claiming.handled();
    const now = this.now();
    switch (decision.kind) {
      case 'claimed':
        if (decision.previousTick !== null && mode === 'grid') this.countMissed(slot, eff, decision.previousTick, tick);
        this.startRun(slot, eff, tick, mode === 'manual', decision.lease);
        return;
      case 'done':
        if (!catchUp) this.skip(slot, 'claimed', tick, now, decision.counted);
        if (mode === 'delay') this.scheduleTick(slot, now + eff.trigger.intervalMs);
        return;
      case 'notDue':
        this.scheduleTick(slot, decision.dueMs);
        return;
      case 'early':
        if (mode === 'manual') return;
        this.schedule(slot, now + Math.max(1, tick - decision.serverNowMs), tick, 'retry', mode);
        return;
      case 'held': {
        const deadline = tick + this.graceMs(slot, eff);
        const step = Math.max(50, Math.min(1_000, Math.floor(this.graceMs(slot, eff) / 5)));
        if (mode === 'delay') {
          // fixedDelay: another node's run is going on; its end sets the next due time.
          this.schedule(slot, now + step, tick, 'retry', mode);
        } else if (mode === 'grid' && now + step <= deadline) {
          this.schedule(slot, now + step, tick, 'retry', mode);
        } else {
          this.skip(slot, 'claimed', tick, now);
        }
        return;
      }
    }
  }

  /**
   * Resolves once the shared clock reaches `tick` (at once when it has), or the runner stops.
   * The runs of the jobs claimed for one tick share one wait.
   */
  private untilTick(tick: number): Promise<void> | undefined {
    if (tick - this.now() <= 0) return undefined;
    let wait = this.tickWaits.get(tick);
    if (wait === undefined) {
      wait = (async () => {
        for (let ms = tick - this.now(); ms > 0 && this.status === 'running'; ms = tick - this.now()) {
          await new Promise<void>((resolve) => this.clock.setTimer(resolve, ms));
        }
        this.tickWaits.delete(tick);
      })();
      this.tickWaits.set(tick, wait);
    }
    return wait;
  }

  private claimFailed(slot: Slot, tick: number, manual: boolean, err: unknown): void {
    const now = this.now();
    const base = {
      jobId: slot.job.id,
      runId: `claim-${tick}`,
      scope: slot.job.scope,
      instanceId: this.instanceId,
      scheduledAt: tick,
      startedAt: now,
      lagMs: now - tick,
      fencingToken: undefined,
      manual,
    };
    const message = errorMessage(err);
    this.emitter.emit('runEnded', { ...base, outcome: 'failed', endedAt: now, durationMs: 0, error: `claiming the lease failed: ${message}`, cause: err });
    if (slot.effective?.trigger.kind === 'fixedDelay') this.scheduleTick(slot, now + slot.effective.trigger.intervalMs);
  }

  /** Counts grid ticks strictly between the previous claim and this one (no node ran them). */
  private countMissed(slot: Slot, eff: EffectiveSchedule, previousTick: number, tick: number): void {
    if (eff.trigger.kind === 'fixedDelay' || previousTick >= tick) return;
    let count: number;
    if (eff.trigger.kind === 'fixedRate') {
      // Grid ticks strictly between the two: exact arithmetic, however long the gap.
      const first = eff.trigger.next(previousTick) ?? tick;
      count = first >= tick ? 0 : Math.ceil((tick - first) / eff.trigger.intervalMs);
    } else {
      count = 0;
      let t = eff.trigger.next(previousTick);
      while (t !== null && t < tick && count < MISSED_WALK_LIMIT) {
        count++;
        t = eff.trigger.next(t);
      }
      // A very long gap (a per-second cron down for hours) is not walked tick by tick on the
      // event loop: the rest is estimated from the spacing of the ticks walked so far.
      if (t !== null && t < tick && count > 0) count += Math.ceil((tick - t) / ((t - previousTick) / (count + 1)));
    }
    if (count > 0) this.emitter.emit('missed', { jobId: slot.job.id, count, afterTick: previousTick, beforeTick: tick });
  }

  private startRun(slot: Slot, eff: EffectiveSchedule, tick: number, manual: boolean, lease: HeldLease | undefined): void {
    const run = executeRun({
      job: slot.job,
      tick,
      manual,
      timeoutMs: eff.timeoutMs,
      leaseMs: eff.leaseMs,
      lease,
      instanceId: this.instanceId,
      logger: this.log,
      now: () => this.now(),
      emitter: this.emitter,
      delayAfterMs: eff.trigger.kind === 'fixedDelay' ? eff.trigger.intervalMs : undefined,
    });
    slot.running = run;
    void run.settled.then(() => {
      if (slot.running === run) slot.running = undefined;
      if (this.status !== 'running') return;
      const current = slot.effective;
      if (current?.trigger.kind === 'fixedDelay') {
        // Installation: the claim compares with the cluster's due time kept in Redis.
        this.scheduleTick(slot, this.now() + current.trigger.intervalMs);
      }
    });
  }
}
