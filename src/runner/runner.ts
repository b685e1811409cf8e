/**
 * The scheduler: the internal core of a runner. It keeps the jobs of one node, their
 * timetable, the fire policy (no overlap, no burst, pause), runs as async calls with timeouts,
 * installation claims through a {@link Coordinator}, and a graceful stop. It emits lifecycle
 * events; stats, metrics and logs are listeners of those and it knows none of them. Its ports
 * (coordinator, settings, claim order, run hooks, task submission) are given at construction
 * by the composition root, which wraps it, with the tasks and the status, in the public `Runner`.
 * @module
 */
import { ErrorCodes, LeaseholdError, leaseholdError } from '../errors.js';
import { completeClock, type Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import { localCoordinator } from '../lease/local.js';
import type { ClaimMode, Coordinator, HeldLease } from '../lease/port.js';
import { normalizeJob } from '../schedule/job.js';
import type { EffectiveSchedule, Trigger } from '../schedule/trigger.js';
import { Claims, type ClaimHost } from './claims.js';
import { Emitter, type Listener, type RunnerEvents, type SkipReason } from './events.js';
import { startRun, type RunPorts } from './start-run.js';
import { endRuns, type ActiveRun } from './end-runs.js';
import { Slot, type SettingsSource } from './slot.js';
import { view, type JobView } from './view.js';
import { fireTick } from './fire.js';
import { ALONE, type ClaimOrder } from './order.js';
import { SharedClock } from './shared-clock.js';
import { Timetable, type TimetableHost } from './timetable.js';
import { ClaimLeads } from './leads.js';
import { NO_EXECUTORS, NO_SETTINGS, type SchedulerOptions } from './ports.js';

export type { SettingsSource } from './slot.js';
export type { SchedulerOptions } from './ports.js';
export { jobInfo, type JobInfo, type JobView } from './view.js';

/** The scheduler of one node; see the module comment. `createRunner` builds it. */
export class Scheduler implements TimetableHost, ClaimHost {
  readonly clock: Timers;
  readonly emitter: Emitter;
  readonly timetable: Timetable;
  readonly coordinator: Coordinator;
  /** How long before a grid tick an installation claim goes out, by schedule. */
  readonly leads: ClaimLeads;
  /** Who claims installation ticks; see {@link ClaimOrder}. */
  readonly order: ClaimOrder;
  private readonly claims: Claims;
  private readonly slots = new Map<string, Slot>();
  /** Removed jobs whose run is still going. */
  private readonly removing = new Set<Slot>();
  private readonly log: Logger;
  private readonly shared: SharedClock;
  private readonly settings: SettingsSource;
  /** What every run is given: the logger, the run hooks, the task submission. */
  private readonly runPorts: RunPorts;
  private status: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  private stopping: Promise<void> | undefined;

  constructor(private readonly opts: SchedulerOptions) {
    this.clock = completeClock(opts.clock);
    this.log = opts.logger;
    this.coordinator = opts.coordinator ?? localCoordinator(this.clock);
    this.leads = new ClaimLeads(this.coordinator.claimLeadMs ?? 0);
    this.settings = opts.settings ?? NO_SETTINGS;
    this.order = opts.claimOrder ?? ALONE;
    this.runPorts = { logger: opts.logger, hooks: opts.hooks, submit: opts.submit ?? NO_EXECUTORS };
    this.emitter = new Emitter((err, event) => this.log.error({ err, event }, 'a listener of %s threw', event));
    this.shared = new SharedClock(this.clock, this.coordinator, this.emitter, (step, wall) => {
      for (const slot of this.slots.values()) this.timetable.afterStep(slot, step, wall);
    });
    this.timetable = new Timetable(this);
    this.claims = new Claims(this, this.log);
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

  /** The current time on the shared clock (Redis time when coordinated). */
  now(): number {
    return this.shared.now();
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
      throw leaseholdError(ErrorCodes.duplicateJob, { job: JSON.stringify(job.id) });
    }
    const slot = new Slot(job);
    this.slots.set(job.id, slot);
    if (this.status === 'running') this.planFirst(slot);
    return view(slot);
  }

  /**
   * Removes a job from this node: no fire of it is planned any more; a run in progress ends
   * as it would have (its outcome is still recorded).
   * @returns false when no job has the id.
   */
  remove(id: string): boolean {
    const slot = this.slots.get(id);
    if (!slot) return false;
    this.slots.delete(id);
    slot.removed = true;
    this.timetable.forget(slot);
    // A stop still waits for its run in progress.
    if (slot.running) {
      this.removing.add(slot);
      void slot.running.settled.then(() => this.removing.delete(slot));
    }
    this.emitter.emit('jobRemoved', { jobId: id });
    return true;
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

  /** Whether the job is registered (cheap; no view is built). */
  has(id: string): boolean {
    return this.slots.has(id);
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
    this.resolve(slot);
    if (slot.paused !== paused || slot.effective?.trigger.key !== before || slot.invalidCause !== invalidCause) {
      if (!slot.running || slot.effective?.trigger.kind !== 'fixedDelay') this.timetable.planNext(slot, this.observeClock(), true);
    }
  }

  /**
   * Starts a run of the job now, outside its schedule (an operator's "run now"). For an
   * installation job the claim still applies: it runs on one node, never beside a run.
   * @returns false when the job is unknown, running, or the runner is not running.
   */
  runNow(jobId: string, request?: string): boolean {
    const slot = this.slots.get(jobId);
    if (!slot || this.status !== 'running' || slot.busy || !slot.effective) return false;
    this.begin(slot, slot.effective, this.now(), 'manual', request);
    return true;
  }

  /**
   * Aborts the job's run in progress on this node with reason `cancelled` (recorded as
   * outcome `cancelled`); the job runs again at its next tick.
   * @returns false when the job is unknown or has no run in progress here.
   */
  cancel(jobId: string): boolean {
    const run = this.slots.get(jobId)?.running;
    if (!run || run.abortedReason !== undefined) return false;
    run.abort(ErrorCodes.cancelled, `job "${jobId}" cancelled by an operator`);
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
    const runs = (): ActiveRun[] => [...this.slots.values(), ...this.removing].flatMap((s) => (s.running ? [s.running] : []));
    await endRuns(this.clock, runs, () => this.claims.settled(), this.opts.shutdownGraceMs);
    this.status = 'stopped';
    await this.coordinator.close();
  }

  private planFirst(slot: Slot): void {
    slot.anchor = this.now() + slot.job.initialDelayMs;
    this.resolve(slot);
    this.timetable.planFirst(slot);
  }

  /** A job's tick is due: see {@link fireTick}. */
  fire(slot: Slot, tick: number, now: number): void {
    fireTick(this, slot, tick, now);
  }

  /** A claim found the lease held by an earlier run: try again within the misfire grace. */
  retry(slot: Slot, tick: number, mode: ClaimMode, backup: boolean): void {
    if (slot.busy || slot.paused || !slot.effective) return;
    this.begin(slot, slot.effective, tick, mode, undefined, backup);
  }

  /** The time to plan with, read with the check for a step of the wall clock: see {@link SharedClock.observe}. */
  observeClock(): number {
    return this.shared.observe();
  }

  /** Applies a job's settings again (the timetable asks after moving a grid). */
  resolve(slot: Slot): void {
    slot.resolve(this.settings, this.emitter, this.log, this.now());
  }

  /** A schedule's claim lead grew: its jobs' next fires go out earlier (the lead is shared: see `leads.ts`). */
  leadGrew(schedule: string): void {
    for (const slot of this.slots.values()) if (slot.effective?.trigger.key === schedule) this.timetable.refire(slot);
  }

  /**
   * A first claimer is suspected: the installation jobs' fires planned a hand-off delay late go
   * out on the tick. Only those of the next 20 s: the live nodes are read every 5 s and a node
   * is dropped 15 s after its last heartbeat, so a node that stays dead is no longer ranked when
   * the later ones come.
   */
  firstSuspected(): void {
    const soon = this.now() + 20_000;
    for (const slot of this.slots.values()) if (slot.job.scope === 'installation' && slot.nextFireAt <= soon) this.timetable.refire(slot);
  }

  /** The claims of the jobs due at one wake travel together, and leave before anything else. */
  afterWake(): void {
    this.coordinator.flush?.();
  }

  skip(slot: Slot, reason: SkipReason, tick: number, now: number, recorded = false): void {
    this.emitter.emit('skipped', { jobId: slot.job.id, scope: slot.job.scope, instanceId: this.instanceId, reason, scheduledAt: tick, at: now, recorded });
  }

  /** Starts a run for `tick`: at once for an instance job, after its claim for an installation job. */
  begin(slot: Slot, eff: EffectiveSchedule, tick: number, mode: ClaimMode, request?: string, backup = false): void {
    if (slot.job.scope === 'instance') this.startRun(slot, eff, tick, mode === 'manual', undefined);
    else this.claims.claim(slot, eff, tick, mode, request, backup);
  }

  /** Starts the run of a tick that is this node's: see `start-run.ts`. */
  startRun(slot: Slot, eff: EffectiveSchedule, tick: number, manual: boolean, lease: HeldLease | undefined): void {
    startRun(this, this.runPorts, slot, eff, tick, manual, lease);
  }
}
