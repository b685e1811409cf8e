/**
 * The claim protocol of installation jobs: before a run the node asks the coordinator for
 * the tick, and the answer decides. Claimed: the run starts on the tick (never before it) and
 * the ticks no node claimed since the last claim are counted missed. Done: another node has
 * the tick (a skip). Held by an earlier run: retried within the misfire grace. Not due
 * (fixedDelay): planned for the cluster's due time. Early: retried at the tick. A claim that
 * fails is a failed run, so a broken Redis never looks like somebody else's turn.
 * @module
 */
import { ErrorCodes, errorMessage, isLeaseholdError } from '../errors.js';
import { sleep, type Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import type { ClaimMode, ClaimResult, Coordinator, HeldLease, LostRun } from '../lease/port.js';
import type { EffectiveSchedule } from '../schedule/trigger.js';
import type { Emitter, SkipReason } from './events.js';
import { countMissedTicks } from './missed.js';
import type { Slot } from './slot.js';
import type { Timetable } from './timetable.js';
import type { ClaimLeads } from './leads.js';
import type { ClaimOrder } from './order.js';

/** What the claim protocol needs of the runner. */
export interface ClaimHost {
  readonly clock: Timers;
  readonly emitter: Emitter;
  readonly coordinator: Coordinator;
  readonly timetable: Timetable;
  /** How long before a grid tick an installation claim goes out, by schedule. */
  readonly leads: ClaimLeads;
  /** The schedule's claim lead grew: the next fires of its jobs, planned already, go out earlier. */
  leadGrew(schedule: string): void;
  /** Who claims installation ticks. */
  readonly order: ClaimOrder;
  /** A first claimer is suspected now: the fires planned a hand-off delay late for its ticks go out on the tick. */
  firstSuspected(): void;
  readonly instanceId: string;
  /** Whether runs may start (the runner runs and is not stopping). */
  readonly isRunning: boolean;
  /** The shared clock (Redis time when coordinated). */
  now(): number;
  /** The same, read with the check for a step of the wall clock: the time a claim's answer plans from. */
  observeClock(): number;
  startRun(slot: Slot, eff: EffectiveSchedule, tick: number, manual: boolean, lease: HeldLease | undefined): void;
  skip(slot: Slot, reason: SkipReason, tick: number, now: number, recorded?: boolean): void;
}

/** Claims installation ticks for one runner; see the module comment. */
export class Claims {
  /** Claims whose answer is not handled yet: a stop waits for them. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Waits for ticks whose claims went out ahead of them, one per tick. */
  private readonly tickWaits = new Map<number, Promise<void>>();

  constructor(
    private readonly host: ClaimHost,
    private readonly log: Logger,
  ) {}

  /**
   * Claims `tick` for the slot's job and starts the run when the claim is won; for a paused
   * job, marks the tick as handled (one paused skip cluster-wide). `request` identifies an
   * operator's run now, which runs once cluster-wide however many nodes try it.
   */
  claim(slot: Slot, eff: EffectiveSchedule, tick: number, mode: ClaimMode, request?: string, backup = false): void {
    slot.claiming = tick;
    const handled = this.decide(slot, eff, tick, mode, request, backup).finally(() => {
      if (slot.claiming === tick) slot.claiming = undefined;
      this.inFlight.delete(handled);
    });
    this.inFlight.add(handled);
  }

  /** Resolves once every claim in flight is handled (a lease won while stopping is released). */
  async settled(): Promise<void> {
    await Promise.all(this.inFlight);
  }

  private async decide(slot: Slot, eff: EffectiveSchedule, tick: number, mode: ClaimMode, request: string | undefined, backup: boolean): Promise<void> {
    const host = this.host;
    // The catch-up tick of a fixedRate job at start is no skip when someone ran it.
    const catchUp = mode === 'grid' && tick < slot.anchor - slot.job.initialDelayMs;
    let result: ClaimResult;
    const ahead = tick - host.now();
    const sentAt = host.clock.monotonic();
    try {
      result = await host.coordinator.claim({
        jobId: slot.job.id, tick, leaseMs: eff.leaseMs, mode,
        // A backup's claim that finds the tick taken is no one's skip: the first claimer ran it.
        countSkip: !catchUp && !backup && (mode === 'grid' || mode === 'delay'),
        ...(request === undefined ? {} : { request }),
        ...(ahead > 0 ? { leadMs: ahead } : {}),
        ...(backup ? { backup } : {}),
      });
      // The first claimer's claim of a grid tick: its round trip sets how early the next one goes.
      if (mode === 'grid' && !backup) this.learnLead(slot, host.clock.monotonic() - sentAt);
      if (backup && mode === 'grid' && !catchUp) this.backupAnswered(slot, tick, result);
    } catch (err) {
      slot.claiming = undefined;
      // A paused tick that cannot be marked is this node's skip all the same.
      if (mode === 'pause') host.skip(slot, 'paused', tick, host.now());
      else this.failed(slot, tick, mode === 'manual', err);
      return;
    }
    // The claim found an earlier run lost (and recorded it): told here, for this node's metrics and log.
    if (result.kind === 'claimed' && result.lost) this.lost(slot, result.lost);
    // A claim sent ahead of its tick: the run starts on the tick, never before it.
    if (result.kind === 'claimed') await this.untilTick(tick);
    slot.claiming = undefined;
    if (!host.isRunning || slot.removed) {
      // Stopping (or the job was removed): no run begins here, and the tick is handed back so
      // another node may still run it within its grace (the next claim counts it missed if none does).
      if (result.kind === 'claimed') {
        await result.lease.release(undefined, true).catch((err: unknown) => this.log.debug({ jobId: slot.job.id, tick, error: errorMessage(err) }, 'handing back the tick of %s failed: its lease expires on its own', slot.job.id));
      }
      // A skip the claim already counted in Redis is told all the same, so the node's own figures agree.
      else if (result.kind === 'done' && result.counted && !catchUp && !backup && mode !== 'pause' && mode !== 'manual') host.skip(slot, 'claimed', tick, host.now(), true);
      return;
    }
    const now = host.observeClock();
    switch (result.kind) {
      case 'claimed': {
        if (result.previousTick !== null && mode === 'grid') {
          // Ticks before the job was due again (paused, invalid, another schedule) are not missed,
          // nor those this node skipped as overruns of its own run (counted as overruns), nor those
          // counted as failed claims (Redis was away when they were due), of those since it was due.
          const after = Math.max(result.previousTick, slot.dueSince);
          const failed = result.failedTicks?.filter((t) => t > after && t < tick) ?? [];
          const count = countMissedTicks(eff.trigger, after, tick) - slot.takeOverruns(after, tick, failed) - failed.length;
          if (count > 0) host.emitter.emit('missed', { jobId: slot.job.id, count, afterTick: result.previousTick, beforeTick: tick });
        }
        host.startRun(slot, eff, tick, mode === 'manual', result.lease);
        return;
      }
      case 'paused':
        host.skip(slot, 'paused', tick, now, true);
        return;
      case 'done':
        // A paused tick another node marked, or a run now another node took: nothing here.
        if (mode === 'pause' || mode === 'manual') return;
        // Another node claimed this tick or a later one: the overruns noted before it can no
        // longer lie between a claim's previous tick and its own.
        slot.takeOverruns(tick, tick);
        // A backup finding the tick taken is no skip; a fixedDelay backup still plans its next try.
        if (!catchUp && !backup) host.skip(slot, 'claimed', tick, now, result.counted);
        if (mode === 'delay') host.timetable.tick(slot, now + eff.trigger.intervalMs);
        return;
      case 'notDue':
        host.timetable.tick(slot, result.dueMs);
        return;
      case 'early':
        if (mode !== 'manual') host.timetable.retryAt(slot, now + Math.max(1, tick - result.serverNowMs), tick, mode, backup);
        return;
      case 'held':
        // A run now that finds the job running is no skip: the run it asked for is going on.
        if (mode === 'manual') {
          this.log.info({ jobId: slot.job.id, holder: result.holder }, 'run now of "%s" not started: it is running (%s holds its lease)', slot.job.id, result.holder);
          return;
        }
        this.held(slot, eff, tick, mode, now, backup);
        return;
    }
  }

  /**
   * A backup's answer says whether the first claimer claimed the grid tick: one that lets its
   * ticks pass has the backup claim them on the tick until it claims one again.
   */
  private backupAnswered(slot: Slot, tick: number, result: ClaimResult): void {
    if (result.kind !== 'claimed' && result.kind !== 'done') return;
    const suspect = this.host.order.backupAnswered?.(slot.job.id, tick, result.kind === 'claimed');
    if (suspect === undefined) return;
    const at = new Date(tick).toISOString();
    this.log.info({ jobId: slot.job.id, tick: at, node: suspect }, 'node %s let tick %s of "%s" pass to this node, its backup (dead, or stalled): this node claims the ticks it ranks first for on the tick until it finds one claimed', suspect, at, slot.job.id);
    this.host.firstSuspected();
  }

  /** Learns the schedule's claim lead from a round trip; a lead that grew moves its jobs' next fires, planned already, earlier. */
  private learnLead(slot: Slot, roundTripMs: number): void {
    const schedule = slot.effective?.trigger.key;
    if (schedule !== undefined && this.host.leads.learn(schedule, roundTripMs)) this.host.leadGrew(schedule);
  }

  /**
   * Another run holds the lease: try again within the misfire grace (a backup's retry is the
   * backup's too), or skip the tick (the first claimer's skip: a backup counts none).
   */
  private held(slot: Slot, eff: EffectiveSchedule, tick: number, mode: ClaimMode, now: number, backup: boolean): void {
    const grace = slot.graceMs(eff);
    const step = Math.max(50, Math.min(1_000, Math.floor(grace / 5)));
    if (mode === 'delay') {
      // fixedDelay: another node's run is going on; its end sets the next due time.
      this.host.timetable.retryAt(slot, now + step, tick, mode, backup);
    } else if (mode === 'grid' && now + step <= tick + grace) {
      this.host.timetable.retryAt(slot, now + step, tick, mode, backup);
    } else if (!backup) {
      this.host.skip(slot, 'claimed', tick, now);
    }
  }

  /**
   * Resolves once the shared clock reaches `tick` (at once when it has), or the runner stops.
   * The runs of the jobs claimed for one tick share one wait.
   */
  private untilTick(tick: number): Promise<void> | undefined {
    const host = this.host;
    if (tick - host.now() <= 0) return undefined;
    let wait = this.tickWaits.get(tick);
    if (wait === undefined) {
      wait = (async () => {
        for (let ms = tick - host.now(); ms > 0 && host.isRunning; ms = tick - host.now()) await sleep(host.clock, ms);
        this.tickWaits.delete(tick);
      })();
      this.tickWaits.set(tick, wait);
    }
    return wait;
  }

  /** A run of the job found lost by this node's claim, already recorded by the claim: the event that says so. */
  private lost(slot: Slot, run: LostRun): void {
    const durationMs = Math.max(0, run.foundAt - run.startedAt);
    this.host.emitter.emit('runEnded', {
      jobId: slot.job.id,
      runId: `lost-${run.token}`,
      scope: slot.job.scope,
      instanceId: run.holder,
      scheduledAt: run.tick,
      startedAt: run.startedAt,
      lagMs: run.startedAt - run.tick,
      fencingToken: run.token,
      manual: run.manual,
      attempt: 1,
      willRetry: false,
      outcome: 'lost',
      endedAt: run.foundAt,
      durationMs,
      error: `no outcome was recorded: node ${run.holder} stopped or froze while it held the lease of this tick (during its run, or before it began) and the lease expired (found by ${this.host.instanceId})`,
      cause: undefined,
      recorded: true,
    });
  }

  private failed(slot: Slot, tick: number, manual: boolean, err: unknown): void {
    const host = this.host;
    const now = host.observeClock();
    host.emitter.emit('runEnded', {
      jobId: slot.job.id,
      runId: `claim-${tick}`,
      scope: slot.job.scope,
      instanceId: host.instanceId,
      scheduledAt: tick,
      startedAt: now,
      lagMs: now - tick,
      fencingToken: undefined,
      manual,
      attempt: 1,
      willRetry: false,
      outcome: 'failed',
      endedAt: now,
      durationMs: 0,
      // The lease port's own errors say which Redis and which tick; others get the tick added.
      error: isLeaseholdError(err, ErrorCodes.redisError) ? err.message : `${errorMessage(err)}; ${manual ? `the run now of "${slot.job.id}"` : `tick ${new Date(tick).toISOString()} of "${slot.job.id}"`} not claimed`,
      cause: err,
      // Redis may have granted a claim whose answer never came: the claim that finds its running
      // marker records the tick lost, and this record then does not count (one per tick).
      ...(isLeaseholdError(err, ErrorCodes.redisError) ? { leaseLost: true } : {}),
    });
    if (slot.effective?.trigger.kind === 'fixedDelay') host.timetable.tick(slot, now + slot.effective.trigger.intervalMs);
  }
}
