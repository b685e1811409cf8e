/**
 * A job's stats batch as it travels from the stats writer to `record.lua`, with the keys and
 * settings of one call; the script's header says what each member does.
 * @module
 */

/** How many recent runs each job keeps in its list, unless configured (`recentRuns`). */
export const DEFAULT_RECENT_RUNS = 50;

/** A stats batch as `record.lua` reads it; see the script's header for each member. */
export interface RecordBatch {
  init?: boolean;
  /** ISO-8601; set once, when the job's stats hash is created. */
  createdAt?: string;
  define?: Record<string, string>;
  incr?: Record<string, number>;
  last?: Record<string, string>;
  /** ISO-8601 end of the batch's newest successful run. */
  successAt?: string;
  fails?: number;
  set?: Record<string, string>;
  inst?: { id: string; incr?: Record<string, number>; last?: Record<string, string>; set?: Record<string, string> };
  /** Recent-run JSON strings, oldest first. */
  runs?: string[];
  /** Runs whose lease was lost while they ran: each counts only if no claim recorded its token lost first. */
  leaseLost?: LeaseLostRun[];
}

/**
 * A run whose record may duplicate a claim's `lost` record, as a batch of its own: its lease was
 * lost while it ran or not released at its end (it has its fencing `token`), or its claim got no
 * answer (Redis may have granted it: it has the `tick` and `holder` instead). Counted once per
 * run, and a schedule's tick whose claims got no answer once however many nodes tried it (see
 * `record.lua`).
 */
export interface LeaseLostRun {
  /** Its fencing token, if it ran. */
  token?: number;
  /** The tick its unanswered claim was for (epoch ms), if it never ran. */
  tick?: number;
  /** The node whose claim got no answer. */
  holder?: string;
  /** True for an operator's run now, whose tick is the moment asked, not one of the schedule's. */
  manual?: boolean;
  incr?: Record<string, number>;
  last?: Record<string, string>;
  fails?: number;
  runs?: string[];
}

/** One job of {@link recordScript}. */
export interface RecordScriptArgs {
  statsKey: string;
  instancesKey: string;
  runsKey: string;
  /** The job's claim state: its running marker says whether a lease-lost run was recorded lost already. */
  stateKey: string;
  /** The writers hash: each writer's highest applied batch and last renewal of its expiry. */
  writersKey: string;
  /**
   * The job's lease: a lease Redis granted to a claim whose node gave up on it (a `leaseLost`
   * entry with a `tick`), which no run holds, is deleted.
   */
  leaseKey: string;
  /** The writer's id; sequence numbers are per writer. */
  writer: string;
  /** The batch's sequence number, >= 1, increasing per writer and job. */
  seq: number;
  batch: RecordBatch;
}

/** What `record.lua` did with one batch. */
export interface RecordReply {
  /** True when the batch was applied now; false when its writer had applied it before. */
  readonly applied: boolean;
  /**
   * The job's failing streak before the batch (the stats hash's `streak`); null when the batch
   * holds no run that counts for the streak, or was not applied now.
   */
  readonly streakBefore: number | null;
}

/** Settings of one {@link recordScript} call, the same for every job in it. */
export interface RecordOptions {
  /** Length of the recent-runs list. */
  runsCap: number;
  /** The writers hash expires this long (ms) after the job's last batch. */
  keepMs: number;
}
