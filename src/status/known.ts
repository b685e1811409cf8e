/**
 * What a node keeps of every job between its reads of the whole status (`read.ts`): a job whose
 * stats kept their version since is judged again from what was kept, and only its version,
 * `seenAt`, lease and settings are read. A read of a thousand jobs of which a few ran reads the stats of those
 * few. A tenth of the known jobs are read whole at each read in turn, so that a change no version
 * shows (a node of an older version's write, a hand edit with redis-cli) is seen within
 * {@link WHOLE_EVERY} reads.
 * @module
 */
import type { KnownJob } from './build.js';
import type { JobStatus } from './model.js';

/** A known job is read whole at one read in this many; the others read its version alone. */
export const WHOLE_EVERY = 10;

/** A job's turn among the reads that read it whole: a small hash of its id, not its place in the list, which moves as other jobs come and go. */
function turnOf(id: string): number {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 33 + id.charCodeAt(i)) % 1_000_003;
  return h % WHOLE_EVERY;
}

/** What one read is told of the jobs the read before it found. */
export interface KnownRead {
  /** The job as the last read left it; undefined when it is new or this read is its turn to be read whole. */
  job(id: string): KnownJob | undefined;
  /**
   * Its scope as the last read found it (undefined: not known): an installation job is read
   * without per-instance rows, an instance job without a lease.
   */
  scope(id: string): JobStatus['scope'] | undefined;
}

/** The jobs the last read found; see the module comment. */
export class KnownJobs {
  private jobs = new Map<string, KnownJob>();
  private rounds = 0;

  /** A read begins: what it is told of the jobs the last read found, in its own round. */
  begin(): KnownRead {
    const round = this.rounds++;
    const jobs = this.jobs;
    return {
      job: (id) => {
        const known = jobs.get(id);
        return known !== undefined && (turnOf(id) + round) % WHOLE_EVERY !== 0 ? known : undefined;
      },
      scope: (id) => jobs.get(id)?.status.scope,
    };
  }

  /** A read ended: what it found replaces what was kept (jobs it did not find are forgotten). */
  keep(jobs: Map<string, KnownJob>): void {
    this.jobs = jobs;
  }
}
