/**
 * A job as the runner holds it (its slot), and how its settings resolve: the declared
 * schedule with the environment and the settings hash applied, and the state that follows
 * (ok, paused, invalidSchedule).
 * @module
 */
import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import type { NormalizedJob } from '../schedule/job.js';
import { readDeclaration, readsEnvironment, type DeclaredSchedule, type Environment } from '../schedule/setting.js';
import { resolveSchedule, type EffectiveSchedule, type JobOverrides } from '../schedule/trigger.js';
import type { Emitter, JobState } from './events.js';
import type { ActiveRun } from './end-runs.js';

/**
 * Where the runner reads per-job overrides (the settings hash, through the status layer).
 * `get` answers a new object when a job's overrides change: the runner re-resolves a schedule
 * only when it gets a different object (or the schedule reads the environment).
 */
export interface SettingsSource {
  get(jobId: string): JobOverrides;
  /** The environment that `fromEnv` schedule values are read from at every fire. Default: the process's. */
  readonly env?: Environment;
}

/** The environment of a settings source that names none. */
const PROCESS_ENV: Environment = process.env;

/** At most this many overrun ticks are noted between two claims won (an overrun of hours of a per-second job keeps the last). */
const MAX_OVERRUNS_NOTED = 10_000;

/** One job in the runner: its definition, its schedule as it applies now, and what it is doing. */
export class Slot {
  effective: EffectiveSchedule | undefined;
  invalidCause: string | undefined;
  paused = false;
  /** Grid anchor for an instance fixedRate job. */
  anchor = 0;
  /** The timetable entry of the next fire; older entries of this job are stale. */
  fireSeq = 0;
  /** The timetable entry of a pending claim retry. */
  retrySeq = 0;
  nextAt: number | null = null;
  /** When the fire for `nextAt` goes out (a claim lead before it, or a hand-off after it). */
  nextFireAt = Infinity;
  /** The last tick this node handled (ran, claimed or skipped). */
  lastTick = -Infinity;
  /**
   * Since when (shared clock) the job has been due on its current schedule: its registration,
   * a resume, a return to a valid schedule, or a new schedule. Ticks before it are not missed.
   */
  dueSince = -Infinity;
  /** Grid ticks this node skipped as overruns since its last claim won (undefined: none). */
  private overruns: number[] | undefined;
  /** The tick whose claim is in flight: nothing else starts meanwhile. */
  claiming: number | undefined;
  /** The run in progress. */
  running: ActiveRun | undefined;
  /** Set once the job is removed from the runner: nothing new starts. */
  removed = false;
  /** The overrides the schedule was last resolved with. */
  private overrides: JobOverrides | undefined;
  /** Warnings given once; created with the first (most jobs never warn). */
  private warned: Set<string> | undefined;
  /** Whether the declared schedule reads the environment (then it is resolved at every fire). */
  private readonly readsEnv: boolean;
  /** The environment of the last resolve. */
  private env: Environment = PROCESS_ENV;

  constructor(readonly job: NormalizedJob) {
    this.readsEnv = readsEnvironment(job.schedule);
  }

  /** The declared schedule with its environment settings read now (what the status describes of an invalid one). */
  get declared(): DeclaredSchedule {
    return readDeclaration(this.job.schedule, this.env);
  }

  /** The job's state as the runner sees it. */
  get state(): JobState {
    return this.invalidCause ? 'invalidSchedule' : this.paused ? 'paused' : 'ok';
  }

  /** How late a tick of `eff` may still start: the job's misfire grace, by default one lease time capped by the interval. */
  graceMs(eff: EffectiveSchedule): number {
    return this.job.misfireGraceMs ?? Math.min(eff.leaseMs, eff.trigger.intervalMs);
  }

  /** Whether a claim or a run occupies the job. */
  get busy(): boolean {
    return this.claiming !== undefined || this.running !== undefined;
  }

  /** Notes a grid tick this node skipped as an overrun (counted as one): no later claim counts it missed. */
  noteOverrun(tick: number): void {
    this.overruns ??= [];
    this.overruns.push(tick);
    if (this.overruns.length > MAX_OVERRUNS_NOTED) this.overruns.shift();
  }

  /**
   * How many of the noted overruns lie strictly between two ticks, those in `countedElsewhere`
   * (counted already as failed claims) left out; forgets every one noted.
   */
  takeOverruns(after: number, before: number, countedElsewhere: readonly number[] = []): number {
    const n = this.overruns?.filter((t) => t > after && t < before && !countedElsewhere.includes(t)).length ?? 0;
    this.overruns = undefined;
    return n;
  }

  /** Applies the job's current settings; emits state changes and warnings. */
  resolve(settings: SettingsSource, emitter: Emitter, log: Logger, now: number): void {
    const id = this.job.id;
    this.env = settings.env ?? PROCESS_ENV;
    const overrides = readOverrides(settings, id, log);
    // The same overrides object and no environment setting: nothing can have changed.
    if (overrides === this.overrides && !this.readsEnv && this.effective !== undefined && this.invalidCause === undefined) return;
    this.overrides = overrides;
    const prevState = this.state;
    const prevCause = this.invalidCause;
    const prevKey = this.effective?.trigger.key;
    const paused = overrides.paused?.trim().toLowerCase();
    if (paused !== undefined && paused !== '' && paused !== 'true' && paused !== 'false') {
      this.warnOnce(emitter, `settings: ${id}.paused is ${JSON.stringify(overrides.paused)}; expected true or false, ignored`);
    } else {
      this.paused = paused === 'true';
    }
    try {
      const anchor = this.job.scope === 'installation' ? 0 : this.anchor;
      this.effective = resolveSchedule(this.job, readDeclaration(this.job.schedule, this.env), overrides, anchor, this.effective?.trigger);
      this.invalidCause = undefined;
      for (const w of this.effective.warnings) this.warnOnce(emitter, `settings: ${w}`);
    } catch (err) {
      this.invalidCause = errorMessage(err);
    }
    const state = this.state;
    // A resume, a return to a valid schedule, a new schedule (not the first resolve: ticks
    // while every node was down are missed all the same).
    if (state === 'ok' && (prevState !== 'ok' || (prevKey !== undefined && this.effective?.trigger.key !== prevKey))) this.dueSince = now;
    if (state !== prevState || (state === 'invalidSchedule' && this.invalidCause !== prevCause)) {
      emitter.emit('jobState', { jobId: id, state, cause: this.invalidCause });
    }
  }

  /**
   * Moves an instance fixedRate job's grid by `ms` (after a step of the wall clock, so that it
   * keeps its period in elapsed time); its trigger is rebuilt at the next resolve.
   */
  shiftAnchor(ms: number): void {
    this.anchor += ms;
    this.overrides = undefined;
  }

  private warnOnce(emitter: Emitter, message: string): void {
    this.warned ??= new Set();
    if (this.warned.has(message)) return;
    this.warned.add(message);
    emitter.emit('warning', { jobId: this.job.id, message });
  }
}

function readOverrides(settings: SettingsSource, id: string, log: Logger): JobOverrides {
  try {
    return settings.get(id);
  } catch (err) {
    log.warn({ err, jobId: id }, 'reading settings failed; using the declared schedule');
    return {};
  }
}
