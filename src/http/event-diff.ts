/**
 * What changed in the cluster's status between two reads, for the event streams' `changes`:
 * the jobs whose status differs (a lease's remaining time ticking down is no change, its
 * extension is), the ids that went, and the instances when they changed.
 * @module
 */
import type { ClusterStatus, InstanceStatus, JobStatus } from '../status/model.js';

/** A lease's end moving by less than this is the read's jitter, not an extension, in ms. */
const LEASE_JITTER_MS = 1_000;

/** What is known of a job at the last read, to tell whether it changed. */
interface Seen {
  readonly text: string;
  readonly leaseEnd: number | null;
}

/** A job's text without its lease's remaining time, which changes at every read. */
function seen(job: JobStatus, generatedAtMs: number): Seen {
  const lease = job.lease;
  const text = JSON.stringify(lease ? { ...job, lease: { ...lease, ttlMs: null } } : job);
  const leaseEnd = lease?.ttlMs === null || lease?.ttlMs === undefined || !Number.isFinite(generatedAtMs) ? null : generatedAtMs + lease.ttlMs;
  return { text, leaseEnd };
}

function changed(a: Seen | undefined, b: Seen): boolean {
  if (!a || a.text !== b.text) return true;
  if (a.leaseEnd === null || b.leaseEnd === null) return a.leaseEnd !== b.leaseEnd;
  return Math.abs(a.leaseEnd - b.leaseEnd) > LEASE_JITTER_MS;
}

/** What changed since the last read. */
export interface StatusChanges {
  readonly jobs: JobStatus[];
  readonly removed: string[];
  /** The instances, when they changed. */
  readonly instances: InstanceStatus[] | undefined;
}

/** Remembers the last status read and tells what the next one changed. */
export class StatusDiff {
  private seenJobs = new Map<string, Seen>();
  private instancesText = '';

  /** What `status` changed since the last call (everything, the first time), and remembers it. */
  next(status: ClusterStatus): StatusChanges {
    const at = Date.parse(status.generatedAt);
    const next = new Map<string, Seen>();
    const jobs: JobStatus[] = [];
    for (const job of status.jobs) {
      const s = seen(job, at);
      next.set(job.id, s);
      if (changed(this.seenJobs.get(job.id), s)) jobs.push(job);
    }
    const removed = [...this.seenJobs.keys()].filter((id) => !next.has(id));
    this.seenJobs = next;
    const instancesText = JSON.stringify(status.instances);
    const instances = instancesText === this.instancesText ? undefined : status.instances;
    this.instancesText = instancesText;
    return { jobs, removed, instances };
  }

  /** Forgets the last status: the next is new in full. */
  reset(): void {
    this.seenJobs = new Map();
    this.instancesText = '';
  }
}
