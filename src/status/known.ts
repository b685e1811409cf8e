/**
 * What a node keeps of every job between its reads of the whole status (`read.ts`): a job whose
 * stats kept their version since is judged again from what was kept, and only its version,
 * `seenAt`, lease and settings are read. A read of a thousand jobs of which a few ran reads the stats of those
 * few. A tenth of the known jobs are read whole at each read in turn, so that a change no version
 * shows (a node of an older version's write, a hand edit with redis-cli) is seen within
 * {@link WHOLE_EVERY} reads.
 *
 * The jobs are kept in one map that each read updates in place, and a job read whole that is as
 * it was keeps the objects kept before: at 100,000 jobs a map made anew per read, and a tenth of
 * the statuses made anew, outlived the read and filled the old generation with what the next read
 * replaced.
 * @module
 */
import { isDeepStrictEqual } from 'node:util';
import type { KnownJob } from './build.js';
import { indexAfter } from './page.js';
import type { JobStatus } from './model.js';

/** A known job is read whole at one read in this many; the others read its version alone. */
export const WHOLE_EVERY = 10;

/** A job's turn among the reads that read it whole: a small hash of its id, not its place in the list, which moves as other jobs come and go. */
function turnOf(id: string): number {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 33 + id.charCodeAt(i)) % 1_000_003;
  return h % WHOLE_EVERY;
}

/** One read's view of the known jobs, and what it found. */
export interface KnownRead {
  /** The job as the last read left it; undefined when it is new or this read is its turn to be read whole. */
  job(id: string): KnownJob | undefined;
  /**
   * Its scope as the last read found it (undefined: not known): an installation job is read
   * without per-instance rows, an instance job without a lease.
   */
  scope(id: string): JobStatus['scope'] | undefined;
  /**
   * What this read found of a job, kept for the next reads; the job as kept before when it is
   * equal to it. A job found without a version (`''`) is not kept: the next read reads it whole.
   */
  found(id: string, job: KnownJob): KnownJob;
  /** The read ended having found the jobs `ids`, sorted: the others are forgotten. */
  end(ids: readonly string[]): void;
}

/** The jobs the reads found; see the module comment. */
export class KnownJobs {
  private readonly jobs = new Map<string, KnownJob>();
  private rounds = 0;

  /** A read begins: what it is told of the jobs the reads before found, in its own round. */
  begin(): KnownRead {
    const round = this.rounds++;
    const jobs = this.jobs;
    let kept = 0;
    return {
      job: (id) => {
        const known = jobs.get(id);
        return known !== undefined && (turnOf(id) + round) % WHOLE_EVERY !== 0 ? known : undefined;
      },
      scope: (id) => jobs.get(id)?.status.scope,
      found: (id, job) => {
        if (job.version === '') {
          jobs.delete(id);
          return job;
        }
        const before = jobs.get(id);
        const keep = before !== undefined && before !== job && before.version === job.version && isDeepStrictEqual(job, before) ? before : job;
        jobs.set(id, keep);
        kept++;
        return keep;
      },
      end: (ids) => {
        // Every job kept was found by this read unless some are gone (rare: a job forgotten).
        if (jobs.size <= kept) return;
        for (const id of jobs.keys()) if (!hasSorted(ids, id)) jobs.delete(id);
      },
    };
  }
}

/** Whether the sorted `ids` hold `id` (a binary search: no set of 100,000 ids made for it). */
function hasSorted(ids: readonly string[], id: string): boolean {
  const after = indexAfter(ids, id, (x) => x);
  return after > 0 && ids[after - 1] === id;
}
