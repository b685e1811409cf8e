/**
 * The runner's lifecycle events. Stats, metrics and logs are listeners of these; the
 * scheduler knows nothing of them.
 * @module
 */
import type { AbortReasonCode } from '../errors.js';
import type { JobScope } from '../schedule/job.js';
import type { ExecutorKind } from '../schedule/submit.js';

/** How a run ended. */
export const RunOutcomes = {
  succeeded: 'succeeded',
  failed: 'failed',
  timedOut: 'timedOut',
  lockLost: 'lockLost',
  /**
   * Its node died (killed, out of memory) or froze past its lease during the run, and no outcome
   * was recorded: recorded once by the node whose claim of the job next found its lease expired.
   */
  lost: 'lost',
  interrupted: 'interrupted',
  cancelled: 'cancelled',
} as const;
/** One of {@link RunOutcomes}. */
export type RunOutcome = (typeof RunOutcomes)[keyof typeof RunOutcomes];

/**
 * Whether a run's end counts in its job's failing streak: a success ends it, any other outcome
 * extends it, but a run stopped from outside (`interrupted` by a shutdown, `cancelled` by an
 * operator) neither ends nor extends it.
 */
export function countsInStreak(outcome: RunOutcome): boolean {
  return outcome !== RunOutcomes.interrupted && outcome !== RunOutcomes.cancelled;
}

/** The outcome of a run (or a task) aborted for each reason. */
export const ABORT_OUTCOMES: Readonly<Record<AbortReasonCode, RunOutcome>> = {
  timeout: 'timedOut',
  lockLost: 'lockLost',
  shutdown: 'interrupted',
  cancelled: 'cancelled',
};

/** Why a start did not happen. */
export const SkipReasons = { overrun: 'overrun', claimed: 'claimed', paused: 'paused' } as const;
/** One of {@link SkipReasons}. */
export type SkipReason = (typeof SkipReasons)[keyof typeof SkipReasons];

/** A run began. Times are epoch milliseconds. */
export interface RunStartedEvent {
  /** The job's id. */
  readonly jobId: string;
  /** A unique id of the run. */
  readonly runId: string;
  /** `instance` or `installation`. */
  readonly scope: JobScope;
  /** The node that ran (or skipped) it. */
  readonly instanceId: string;
  /** The tick the run is for. */
  readonly scheduledAt: number;
  /** When the handler was called, epoch ms. */
  readonly startedAt: number;
  /** `startedAt - scheduledAt`. */
  readonly lagMs: number;
  /** The claim's fencing token (installation jobs). */
  readonly fencingToken: number | undefined;
  /** True for a run started by an operator rather than the schedule. */
  readonly manual: boolean;
  /** Which attempt at the tick this is: 1, or more for a retry (a job's `retry` option). */
  readonly attempt: number;
}

/** A run ended (or was given up on: a handler that ignores its abort is reported once aborted). */
export interface RunEndedEvent extends RunStartedEvent {
  /** How the run ended. */
  readonly outcome: RunOutcome;
  /** When the run ended, epoch ms. */
  readonly endedAt: number;
  /** How long the run took, ms. */
  readonly durationMs: number;
  /** The error's message for `failed` runs and aborts. */
  readonly error: string | undefined;
  /** The thrown value itself, for loggers. */
  readonly cause: unknown;
  /**
   * True when this attempt failed and another follows on the same tick: the tick's outcome is
   * that of its last attempt, and only that one is counted.
   */
  readonly willRetry: boolean;
  /**
   * True when a claim may have recorded this run `lost` already (installation jobs): its lease
   * was lost while it ran or could not be released at its end, or its claim got no answer
   * (Redis may have granted it). Its record counts only if no claim recorded the same run
   * `lost` first: one record per fencing token, and per tick for an unanswered claim.
   */
  readonly leaseLost?: boolean;
  /**
   * True when the run is already recorded in the cluster's counters: a `lost` run, which the
   * claim that found it recorded (the event is told on that node; its `instanceId` is the node
   * that ran it).
   */
  readonly recorded?: boolean;
}

/** A start that did not happen. */
export interface SkippedEvent {
  /** The job's id. */
  readonly jobId: string;
  /** `instance` or `installation`. */
  readonly scope: JobScope;
  /** The node that ran (or skipped) it. */
  readonly instanceId: string;
  /** Why the start did not happen. */
  readonly reason: SkipReason;
  /** The tick, epoch ms. */
  readonly scheduledAt: number;
  /** When the skip happened, epoch ms. */
  readonly at: number;
  /** True when the skip was already added to the cluster's counters (by the claim itself). */
  readonly recorded: boolean;
}

/** Ticks that no node ran (counted once, by the node that claims the next tick). */
export interface MissedEvent {
  /** The job's id. */
  readonly jobId: string;
  /** How many ticks no node ran. */
  readonly count: number;
  /** The last tick that was claimed before the gap. */
  readonly afterTick: number;
  /** The tick claimed after the gap. */
  readonly beforeTick: number;
}

/** A job's next due time changed. */
export interface ScheduledEvent {
  /** The job's id. */
  readonly jobId: string;
  /** The next tick; null when none is planned. */
  readonly nextDueAt: number | null;
}

/** A job's state as the runner sees it. */
export const JobStates = { ok: 'ok', invalidSchedule: 'invalidSchedule', paused: 'paused' } as const;
/** One of {@link JobStates}. */
export type JobState = (typeof JobStates)[keyof typeof JobStates];

/** A job became valid, invalid, paused or resumed. */
export interface JobStateEvent {
  /** The job's id. */
  readonly jobId: string;
  /** The new state. */
  readonly state: JobState;
  /** Why the schedule is invalid. */
  readonly cause: string | undefined;
}

/** A job was removed from this node (`runner.remove`). */
export interface JobRemovedEvent {
  /** The job's id. */
  readonly jobId: string;
}

/** The node's wall clock stepped (against its monotonic clock). */
export interface ClockStepEvent {
  /** The size of the step, ms: positive forward, negative back. */
  readonly stepMs: number;
  /**
   * True when the jobs were planned again from the new time (the node schedules by its own
   * clock); false when the schedule did not move (it keeps Redis time).
   */
  readonly replanned: boolean;
}

/** A problem that is not a run's outcome: a bad setting, an event-loop stall. */
export interface WarningEvent {
  /** The job it is about; undefined when it is about the node. */
  readonly jobId: string | undefined;
  /** What is wrong, for people. */
  readonly message: string;
}

/** A background task ended (see `runner.submit`): on this node, once per attempt. */
export interface TaskEndedEvent {
  /** The executor it ran on. */
  readonly executor: string;
  /** The executor's kind. */
  readonly kind: ExecutorKind;
  /** The task's name (its definition's id). */
  readonly task: string;
  /** The submission's id. */
  readonly taskId: string;
  /** The node that ran it. */
  readonly instanceId: string;
  /** How it ended: as a run (`lockLost` never). */
  readonly outcome: RunOutcome;
  /** Which attempt this was. */
  readonly attempt: number;
  /** How long it ran, ms. */
  readonly durationMs: number;
  /** The error's message when it did not succeed. */
  readonly error: string | undefined;
  /** The thrown value itself, for loggers. */
  readonly cause: unknown;
  /** True when a queue executor will try it again. */
  readonly willRetry: boolean;
}

/** Every event the runner emits, by name. */
export interface RunnerEvents {
  /** A run began. */
  runStarted: RunStartedEvent;
  /** A run ended. */
  runEnded: RunEndedEvent;
  /** A start did not happen. */
  skipped: SkippedEvent;
  /** Ticks that no node ran were found. */
  missed: MissedEvent;
  /** A job's next due time changed. */
  scheduled: ScheduledEvent;
  /** A job became valid, invalid, paused or resumed. */
  jobState: JobStateEvent;
  /** A job was removed from this node. */
  jobRemoved: JobRemovedEvent;
  /** The node's wall clock stepped. */
  clockStep: ClockStepEvent;
  /** A background task ended. */
  taskEnded: TaskEndedEvent;
  /** A problem that is not a run's outcome (a bad setting, an event-loop stall). */
  warning: WarningEvent;
}

/** A listener of one event. */
export type Listener<K extends keyof RunnerEvents> = (event: RunnerEvents[K]) => void;

/** A tiny typed emitter; a throwing listener is reported, never breaks the runner. */
export class Emitter {
  private readonly listeners: { [K in keyof RunnerEvents]?: Listener<K>[] } = {};

  constructor(private readonly onListenerError: (err: unknown, event: string) => void) {}

  on<K extends keyof RunnerEvents>(event: K, fn: Listener<K>): () => void {
    const list = (this.listeners[event] ??= []) as Listener<K>[];
    list.push(fn);
    return () => {
      const i = list.indexOf(fn);
      if (i >= 0) list.splice(i, 1);
    };
  }

  /** Whether anyone listens to `event` (so a frequent event is built only when it is heard). */
  listens(event: keyof RunnerEvents): boolean {
    return (this.listeners[event]?.length ?? 0) > 0;
  }

  emit<K extends keyof RunnerEvents>(event: K, payload: RunnerEvents[K]): void {
    const list = this.listeners[event] as Listener<K>[] | undefined;
    if (!list) return;
    for (const fn of list) {
      try {
        fn(payload);
      } catch (err) {
        this.onListenerError(err, event);
      }
    }
  }
}
