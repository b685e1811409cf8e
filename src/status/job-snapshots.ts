/**
 * The snapshots of `GET /manage/jobs/:id`: one {@link SnapshotCache} per job, fresh for a
 * second, so that however many requests a node answers, Redis sees at most one read of a job
 * per second from it. An id is read only when it is known (a job of this node, or one in the
 * cluster's cached status): an unknown id costs no Redis command, and the caches stay bounded
 * by the jobs that exist.
 * @module
 */
import type { Timers } from '../clock.js';
import type { ClusterStatus, JobDetail } from './model.js';
import { SnapshotCache } from './snapshot.js';

/** A job's snapshot is served as it is for this long, in ms. */
const JOB_FRESH_MS = 1_000;
/** After its freshness, a job's snapshot is served this much longer while a new one is read, in ms. */
const JOB_STALE_MS = 2_000;
/** A job's cache not asked for this long is dropped, in ms. */
const IDLE_MS = 60_000;

/** What {@link JobSnapshots} reads with. */
export interface JobSnapshotsDeps {
  /** Reads one job from Redis (undefined when no node registered it). */
  readonly read: (id: string) => Promise<JobDetail | undefined>;
  /** Whether the job is one of this node's. */
  readonly local: (id: string) => boolean;
  /** The cluster's status, as cached for `GET /manage/jobs`. */
  readonly cluster: () => Promise<ClusterStatus>;
  readonly onBackgroundError: (err: unknown) => void;
  readonly clock: Timers;
}

interface Entry {
  readonly cache: SnapshotCache<JobDetail | undefined>;
  usedAt: number;
}

/** See the module comment. */
export class JobSnapshots {
  private readonly entries = new Map<string, Entry>();
  private readonly ids = new WeakMap<ClusterStatus, ReadonlySet<string>>();

  constructor(private readonly d: JobSnapshotsDeps) {}

  /** The job as its snapshot has it; undefined for an unknown id. */
  async get(id: string): Promise<JobDetail | undefined> {
    let entry = this.entries.get(id);
    if (!entry) {
      if (!(await this.known(id))) return undefined;
      entry = this.entries.get(id) ?? this.add(id);
    }
    entry.usedAt = this.d.clock.monotonic();
    return (await entry.cache.get()).value;
  }

  /** Forgets a job's snapshot (after a change this node made), or every one. */
  invalidate(id?: string): void {
    if (id === undefined) this.entries.clear();
    else this.entries.delete(id);
  }

  private async known(id: string): Promise<boolean> {
    if (this.d.local(id)) return true;
    const cluster = await this.d.cluster();
    let ids = this.ids.get(cluster);
    if (!ids) this.ids.set(cluster, (ids = new Set(cluster.jobs.map((j) => j.id))));
    return ids.has(id);
  }

  private add(id: string): Entry {
    const now = this.d.clock.monotonic();
    for (const [k, e] of this.entries) if (now - e.usedAt > IDLE_MS) this.entries.delete(k);
    const entry: Entry = { cache: new SnapshotCache(() => this.d.read(id), this.d.onBackgroundError, this.d.clock, { freshMs: JOB_FRESH_MS, staleMs: JOB_STALE_MS }), usedAt: now };
    this.entries.set(id, entry);
    return entry;
  }
}
