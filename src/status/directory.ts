/**
 * The installation's job ids, sorted, for pages that read only their own jobs: a page of jobs
 * is cut from this list and its jobs are read ({@link readListed}), so a page costs Redis a few
 * commands per job on it however many jobs the installation has, and the node holds no status
 * of every job. The list is one `SMEMBERS` of the job set, kept in a {@link SnapshotCache}.
 *
 * A search (`q`) matches each job's id and description. A job this node runs has its
 * description here; the others' are read from their stats hashes once and kept for
 * {@link DESCRIPTIONS_KEEP_MS}.
 * @module
 */
import type { Timers } from '../clock.js';
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { pipelined } from '../redis/pipeline.js';
import { JOB_ID_PATTERN } from '../schedule/job.js';
import { searchTextOf } from './page.js';
import { isWrongType } from './settings.js';

/** How long the descriptions of the jobs of other nodes are kept before they are read again, in ms. */
export const DESCRIPTIONS_KEEP_MS = 60_000;
/** How many descriptions one pipeline reads. */
const DESCRIPTIONS_CHUNK = 1_000;

/** The job ids of the installation, sorted. */
export interface JobDirectory {
  readonly ids: readonly string[];
}

function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Reads the job set: its ids that are job ids (an operator's typo is left out), sorted. */
export async function readDirectory(redis: RedisClient, keys: Keys): Promise<JobDirectory> {
  let members: string[];
  try {
    members = await redis.smembers(keys.jobs);
  } catch (err) {
    // A job set of another type (an operator's mistake) reads as empty, as in the whole status.
    if (isWrongType(err)) return { ids: [] };
    throw new LeaseholdError(ErrorCodes.redisError, `reading the job ids from Redis failed: ${errorMessage(err)}`, { cause: err });
  }
  return { ids: members.filter((id) => JOB_ID_PATTERN.test(id)).sort(byId) };
}

/** What {@link JobSearch} needs. */
export interface JobSearchDeps {
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly clock: Timers;
  /** The description of a job this node runs (undefined: it has none); null for a job it does not run. */
  readonly localDescription: (id: string) => string | undefined | null;
}

/** The search texts of a directory's jobs, in its order. */
export class JobSearch {
  private readonly texts = new WeakMap<JobDirectory, Promise<string[]>>();
  private remote = new Map<string, string>();
  private remoteAt = -Infinity;

  constructor(private readonly d: JobSearchDeps) {}

  /** Each job's search text (see {@link searchTextOf}), made once per directory. */
  textsOf(dir: JobDirectory): Promise<string[]> {
    let texts = this.texts.get(dir);
    if (!texts) {
      texts = this.make(dir);
      // A failed read is not kept: the next search tries again.
      texts.catch(() => this.texts.delete(dir));
      this.texts.set(dir, texts);
    }
    return texts;
  }

  private async make(dir: JobDirectory): Promise<string[]> {
    const now = this.d.clock.monotonic();
    if (now - this.remoteAt >= DESCRIPTIONS_KEEP_MS) {
      this.remote = new Map();
      this.remoteAt = now;
    }
    const descriptions = dir.ids.map((id) => this.d.localDescription(id));
    const unread = dir.ids.filter((id, i) => descriptions[i] === null && !this.remote.has(id));
    for (let from = 0; from < unread.length; from += DESCRIPTIONS_CHUNK) {
      const chunk = unread.slice(from, from + DESCRIPTIONS_CHUNK);
      const replies = await pipelined(this.d.redis, chunk.map((id) => ({ key: this.d.keys.stats(id), queue: (p) => p.hget(this.d.keys.stats(id), 'description') })));
      chunk.forEach((id, i) => {
        const [err, value] = replies[i] ?? [null, null];
        // A stats hash of another type (an operator's mistake) has no description to match.
        if (err && !isWrongType(err)) throw new LeaseholdError(ErrorCodes.redisError, `reading the descriptions from Redis failed: ${err.message}`, { cause: err });
        this.remote.set(id, typeof value === 'string' ? value : '');
      });
    }
    return dir.ids.map((id, i) => searchTextOf(id, descriptions[i] ?? this.remote.get(id)));
  }
}
