/**
 * Which jobs have series of their own in a node's metrics. Each job with its own series adds
 * about forty lines to every scrape once it has run on the node (two histograms of fifteen
 * buckets, counters, gauges), and prom-client holds them between scrapes: a node that ran
 * 100,000 jobs once each would answer a scrape with 4 million lines (310 MB), its event loop
 * blocked for seconds. So the first jobs a node hears of, up to a limit, have series of their
 * own; the runs of the rest are folded into one set of series, `job="(other)"`, where the
 * counters and histograms add up. Which job it was is in the status (`GET /manage/jobs`).
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';

/** The `job` label of the series the jobs beyond the limit share. No job id can be it. */
export const OTHER_JOBS = '(other)';

/** How many jobs have series of their own unless configured (`metricsJobLimit`). */
export const DEFAULT_JOB_LIMIT = 1_000;

/** The largest `metricsJobLimit` taken. */
const MAX_JOB_LIMIT = 1_000_000;

/** Checks a configured limit: a whole number from 0 to 1,000,000. */
export function checkJobLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 0 || limit > MAX_JOB_LIMIT) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `metricsJobLimit must be a whole number from 0 to ${MAX_JOB_LIMIT}, got ${String(limit)}`);
  }
  return limit;
}

/** The `job` label of each job's series: its id for the first `limit` jobs, else {@link OTHER_JOBS}. */
export class JobLabels {
  private readonly own = new Set<string>();
  private folded = false;

  /** @param onFirstFold - called once, when the first job is folded into {@link OTHER_JOBS}. */
  constructor(
    private readonly limit: number,
    private readonly onFirstFold: () => void = () => undefined,
  ) {}

  /** The label of the job's series; a job not met before takes a place of its own while one is left. */
  of(jobId: string): string {
    if (this.own.has(jobId)) return jobId;
    if (this.own.size < this.limit) {
      this.own.add(jobId);
      return jobId;
    }
    return this.fold();
  }

  /**
   * Labels for one scrape's series of jobs the node may not run (met in the cluster's status): a
   * job with a place keeps its label, the others use the places still free for this scrape only,
   * so that a job the node adds later still finds one. The rest are folded.
   */
  borrow(): (jobId: string) => string {
    let free = this.limit - this.own.size;
    return (jobId) => {
      if (this.own.has(jobId)) return jobId;
      if (free <= 0) return this.fold();
      free--;
      return jobId;
    };
  }

  /** The label of a job that keeps no series of its own: {@link OTHER_JOBS}. */
  fold(): string {
    if (!this.folded) {
      this.folded = true;
      this.onFirstFold();
    }
    return OTHER_JOBS;
  }

  /** The job is gone from the node: its place, if it had one, is free for another. */
  forget(jobId: string): boolean {
    return this.own.delete(jobId);
  }

  /** Whether the job has series of its own (without taking a place for it). */
  hasOwn(jobId: string): boolean {
    return this.own.has(jobId);
  }

  /** Whether a job has been folded into {@link OTHER_JOBS} yet. */
  get anyFolded(): boolean {
    return this.folded;
  }
}
