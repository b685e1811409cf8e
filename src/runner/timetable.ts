/**
 * The timetable: every job's next fire in one min-heap, behind one timer (capped at
 * {@link MAX_TIMER_MS}, the clock read again on wake). It plans a job's first and next ticks
 * from its trigger and hands each fire, and each claim retry, back to the runner when due.
 * @module
 */
import { MAX_TIMER_MS, nextTurn, type TimerHandle, type Timers } from '../clock.js';
import type { ClaimMode } from '../lease/port.js';
import type { Emitter } from './events.js';
import type { ClaimLeads } from './leads.js';
import { MinHeap } from './heap.js';
import { handoffOf, placeOf, type ClaimOrder } from './order.js';
import type { Slot } from './slot.js';

/** An invalid schedule is checked again this often. */
const RECHECK_INVALID_MS = 60_000;

interface Entry {
  readonly at: number;
  readonly seq: number;
  readonly slot: Slot;
  readonly kind: 'fire' | 'retry';
  readonly tick: number;
  readonly mode: ClaimMode;
  /** A retry of a backup's claim. */
  readonly backup: boolean;
}

/** What the timetable needs of the runner. */
/** Fires handled in one turn of the event loop; a tick of more jobs is handled in slices. */
const FIRES_PER_TURN = 200;

export interface TimetableHost {
  readonly clock: Timers;
  readonly emitter: Emitter;
  /** The shared clock (Redis time when coordinated). */
  now(): number;
  /** Whether fires may be planned (the runner runs). */
  readonly isRunning: boolean;
  /** How long before a grid tick an installation claim goes out, by schedule. */
  readonly leads: ClaimLeads;
  /** Who claims installation ticks. */
  readonly order: ClaimOrder;
  /** A job's tick is due (`now` may be up to the claim lead before it). */
  fire(slot: Slot, tick: number, now: number): void;
  /** A claim retry is due. */
  retry(slot: Slot, tick: number, mode: ClaimMode, backup: boolean): void;
  /** Applies a job's settings again. */
  resolve(slot: Slot): void;
  /**
   * The time to plan with, read with the runner's check for a step of its wall clock (a step
   * seen replans every job): a wake's time, and every time planned from after an await.
   */
  observeClock(): number;
  /** Every fire due at one wake has been handed over. */
  afterWake(): void;
}

/** The timetable of one runner; see the module comment. */
export class Timetable {
  private readonly heap = new MinHeap<Entry>();
  private seq = 0;
  private timer: TimerHandle | undefined;
  private timerAt = Infinity;
  /** A large tick is being handled in slices: the next slice arms the timer when it is done. */
  private slicing = false;

  constructor(private readonly host: TimetableHost) {}

  /** Plans a job's first fire when the runner starts or the job is added. */
  planFirst(slot: Slot): void {
    const now = this.host.now();
    const { job } = slot;
    const t = slot.effective?.trigger;
    if (slot.invalidCause || !t) {
      this.at(slot, now + RECHECK_INVALID_MS, now + RECHECK_INVALID_MS);
    } else if (t.kind === 'cron') {
      this.tick(slot, t.next(now));
    } else if (t.kind === 'fixedRate' && job.scope === 'installation') {
      // The shared grid: with an initial delay wait for the first tick after it; without,
      // take the current period's tick if nobody ran it (the claim decides).
      const from = now + job.initialDelayMs;
      const next = t.next(from - 1) ?? from; // first grid tick at or after `from`
      this.tick(slot, job.initialDelayMs > 0 || next === from ? next : next - t.intervalMs);
    } else {
      this.tick(slot, now + job.initialDelayMs);
    }
  }

  /**
   * Plans the next fire after `after` from the slot's trigger (grid jobs), or a recheck of an
   * invalid schedule. A fixedDelay job is planned when its run ends, or at once with `replace`.
   */
  planNext(slot: Slot, after: number, replace = false): void {
    const t = slot.effective?.trigger;
    if (slot.invalidCause || !t) {
      this.at(slot, after + RECHECK_INVALID_MS, after + RECHECK_INVALID_MS);
    } else if (t.kind !== 'fixedDelay') {
      this.tick(slot, t.next(after));
    } else if (replace) {
      this.tick(slot, after + t.intervalMs);
    }
  }

  /** Plans the job's next fire for `tick` (null: the schedule never fires again). */
  tick(slot: Slot, tick: number | null): void {
    if (tick === null) {
      slot.fireSeq = ++this.seq;
      slot.nextAt = null;
      this.host.emitter.emit('scheduled', { jobId: slot.job.id, nextDueAt: null });
      return;
    }
    this.at(slot, this.fireAt(slot, tick), tick);
  }

  /** Plans the job's next fire again for the tick it is planned for, when its claim lead or its hand-off now has it go out earlier. */
  refire(slot: Slot): void {
    if (slot.nextAt === null) return;
    const at = this.fireAt(slot, slot.nextAt);
    if (at < slot.nextFireAt) this.push(slot, at, slot.nextAt, 'fire', 'grid', false);
  }

  /** Plans a claim retry of `tick` at `at`. */
  retryAt(slot: Slot, at: number, tick: number, mode: ClaimMode, backup = false): void {
    this.push(slot, at, tick, 'retry', mode, true, backup);
  }

  /** Plans the job's next fire for `tick`, firing at `at` (at most the claim lead before it). */
  at(slot: Slot, at: number, tick: number): void {
    this.push(slot, at, tick, 'fire', 'grid');
  }

  /** Drops every entry and the timer. */
  clear(): void {
    this.disarm();
    this.heap.clear();
  }

  /**
   * When a tick fires. An installation job: its first claimer fires ahead of a grid tick (cron,
   * fixedRate) by its schedule's claim lead (see `leads.ts`), at most a quarter of its interval,
   * so the claim's round trip is over when the tick comes (the run still starts on the tick);
   * the backup and the others fire a hand-off delay after it (the backup: as `handoffOf` says,
   * on the tick while every node ranked ahead of it is suspected, two delays late when it passes
   * over one). Everything else fires on the tick.
   */
  private fireAt(slot: Slot, tick: number): number {
    if (slot.job.scope !== 'installation') return tick;
    const delay = slot.effective?.trigger.kind === 'fixedDelay';
    const place = placeOf(this.host.order, slot.job.id, delay, tick);
    if (place === 1) return tick + (handoffOf(this.host.order, slot, delay, tick) ?? this.host.order.handoffMs);
    if (place >= 2) return tick + this.host.order.handoffMs;
    const trigger = slot.effective?.trigger;
    if (!trigger || trigger.kind === 'fixedDelay') return tick;
    return tick - Math.min(this.host.leads.plan(trigger.key, tick), Math.floor(trigger.intervalMs / 4));
  }

  private push(slot: Slot, at: number, tick: number, kind: 'fire' | 'retry', mode: ClaimMode, announce = true, backup = false): void {
    if (!this.host.isRunning || slot.removed) return;
    const seq = ++this.seq;
    if (kind === 'fire') {
      slot.fireSeq = seq;
      slot.nextAt = tick;
      slot.nextFireAt = at;
      if (announce) this.host.emitter.emit('scheduled', { jobId: slot.job.id, nextDueAt: tick });
    } else {
      slot.retrySeq = seq;
    }
    this.heap.push({ at, seq, slot, kind, tick, mode, backup });
    if (at < this.timerAt) this.arm();
  }

  /**
   * Plans a job again after the wall clock stepped by `step` ms. An instance fixedRate or a
   * fixedDelay job keeps its period in elapsed time. A grid job (cron, and the shared fixedRate
   * grid) goes on at its next tick in the new time, and never in a burst: after a forward
   * step the ticks skipped are not run. After a backward step a tick it already ran is not run
   * again, as long as waiting for the next new one costs at most one period; past that (a step
   * back of more than a period) the old ticks were read off a wrong clock, and the job goes on
   * at its next tick in the new time.
   */
  afterStep(slot: Slot, step: number, now: number): void {
    const t = slot.effective?.trigger;
    if (slot.nextAt === null || !t) {
      if (slot.invalidCause) this.planNext(slot, now);
      return;
    }
    if (t.kind === 'fixedDelay' || (t.kind === 'fixedRate' && slot.job.scope === 'instance')) {
      if (t.kind === 'fixedRate') {
        slot.shiftAnchor(step);
        this.host.resolve(slot);
      }
      this.tick(slot, slot.nextAt + step);
      return;
    }
    const fresh = t.next(Math.max(now - 1, slot.lastTick));
    const lastRunAt = slot.lastTick + step; // when the last tick ran, on the new clock
    const patient = fresh !== null && fresh - lastRunAt <= 2 * t.intervalMs;
    this.tick(slot, patient ? fresh : t.next(now - 1));
  }

  /** Makes every pending entry of the slot stale: a removed job fires no more. */
  forget(slot: Slot): void {
    slot.fireSeq = ++this.seq;
    slot.retrySeq = ++this.seq;
    slot.nextAt = null;
  }

  /** Makes any pending retry of the slot stale (a new tick supersedes it). */
  dropRetry(slot: Slot): void {
    slot.retrySeq = ++this.seq;
  }

  private arm(): void {
    if (this.slicing) return;
    this.disarm();
    const top = this.heap.peek();
    if (!top || !this.host.isRunning) return;
    const now = this.host.now();
    const delay = Math.max(0, Math.min(top.at - now, MAX_TIMER_MS));
    this.timerAt = now + delay;
    this.timer = this.host.clock.setTimer(() => this.wake(), delay);
  }

  private disarm(): void {
    if (this.timer !== undefined) this.host.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private wake(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.host.observeClock();
    let handled = 0;
    for (let top = this.heap.peek(); top && top.at <= now; top = this.heap.peek()) {
      if (++handled > FIRES_PER_TURN) {
        // The rest of a large tick goes on at the next turn of the event loop: requests, lease
        // extensions and claim replies waiting meanwhile are served between the slices.
        this.host.afterWake();
        this.disarm();
        this.slicing = true;
        nextTurn(() => {
          this.slicing = false;
          this.wake();
        });
        return;
      }
      this.heap.pop();
      const { slot } = top;
      if (top.kind === 'fire' && top.seq === slot.fireSeq) this.host.fire(slot, top.tick, now);
      else if (top.kind === 'retry' && top.seq === slot.retrySeq) this.host.retry(slot, top.tick, top.mode, top.backup);
    }
    this.host.afterWake();
    this.arm();
  }
}
