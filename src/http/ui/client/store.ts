/**
 * The page's view of the cluster, kept live by `GET /manage/events`: the whole status on
 * every (re)connection, then the jobs that changed. EventSource reconnects by itself after a
 * dropped stream (a node restart, the load balancer moving it); after an HTTP error (a node
 * shutting down answers 503) it gives up, so the page opens a new one itself, backing off.
 * @module
 */
import type { Access, Changes, ExecutorRow, InstanceStatus, JobStatus, PagedSummary, Snapshot } from './types.js';

/** The routes' folder (`/manage/`, or `/<prefix>/manage/` behind a path prefix), from the script's own URL. */
const BASE = new URL('../', import.meta.url);

/** A URL of the status routes, relative to their folder: `api('jobs/x')`. */
export function api(path: string): string {
  return new URL(path, BASE).href;
}

/** The state of the live connection. */
export type Connection = 'connecting' | 'live' | 'reconnecting';

/** What changed, for the views. */
export type StoreEvent =
  | { readonly kind: 'snapshot' }
  | { readonly kind: 'changes'; readonly ids: readonly string[]; readonly removed: readonly string[]; readonly instances: boolean; readonly executors: boolean }
  | { readonly kind: 'connection' }
  | { readonly kind: 'access' };

/** A queue that rose at this many changes in a row (without falling) is growing. */
export const GROWING_RISES = 2;

/** An executor's row's key: its name, and its node for a loop or worker executor. */
export function executorKey(e: ExecutorRow): string {
  return `${e.name}\u0000${e.instanceId ?? ''}`;
}

/** The page's data. */
export class Store {
  readonly jobs = new Map<string, JobStatus>();
  /** When each held lease ends, on the cluster's clock (epoch ms): its TTL counted from the read that saw it. */
  readonly leaseEnds = new Map<string, number>();
  instances: InstanceStatus[] = [];
  /** The executors of background tasks, as the node last sent them. */
  executors: ExecutorRow[] = [];
  /** Per executor row: its last queue depth and how many times in a row it rose. */
  private readonly depths = new Map<string, { queued: number; rises: number }>();
  /** The status's time (Redis's) minus this browser's, in ms: countdowns run on the cluster's clock. */
  skewMs = 0;
  connection: Connection = 'connecting';
  /** Why the status cannot be read now (Redis unreachable), or null. */
  problem: string | null = null;
  access: Access | null = null;
  loaded = false;
  /**
   * A large installation's counts, when the stream sends counts instead of jobs: `jobs` then
   * holds the pages the overview loaded (`pages.ts`), not every job.
   */
  paged: PagedSummary | null = null;
  private readonly listeners = new Set<(e: StoreEvent) => void>();
  private source: EventSource | undefined;
  private backoffMs = 1_000;

  /** Now on the cluster's clock, epoch ms. */
  now(): number {
    return Date.now() + this.skewMs;
  }

  on(fn: (e: StoreEvent) => void): void {
    this.listeners.add(fn);
  }

  private emit(e: StoreEvent): void {
    for (const fn of this.listeners) fn(e);
  }

  private clock(generatedAt: string): void {
    const t = Date.parse(generatedAt);
    if (Number.isFinite(t)) this.skewMs = t - Date.now();
  }

  /** Keeps a job read at `readAt` (the cluster's epoch ms). */
  put(job: JobStatus, readAt: number): void {
    this.jobs.set(job.id, job);
    const ttl = job.lease?.ttlMs;
    if (ttl === null || ttl === undefined) this.leaseEnds.delete(job.id);
    else this.leaseEnds.set(job.id, readAt + ttl);
  }

  /**
   * Keeps the executors, following each queue's depth: a depth that rose at each of its last
   * {@link GROWING_RISES} changes, without falling, is growing (until it falls).
   */
  setExecutors(rows: readonly ExecutorRow[]): void {
    this.executors = [...rows];
    const keys = new Set<string>();
    for (const e of rows) {
      const key = executorKey(e);
      keys.add(key);
      const d = this.depths.get(key);
      if (!d) this.depths.set(key, { queued: e.queued, rises: 0 });
      else {
        if (e.queued > d.queued) d.rises++;
        else if (e.queued < d.queued) d.rises = 0;
        d.queued = e.queued;
      }
    }
    for (const key of [...this.depths.keys()]) if (!keys.has(key)) this.depths.delete(key);
  }

  /** Whether an executor's queue keeps growing. */
  growing(e: ExecutorRow): boolean {
    return e.queued > 0 && (this.depths.get(executorKey(e))?.rises ?? 0) >= GROWING_RISES;
  }

  /** Opens the live connection and reads what the node allows. */
  start(): void {
    this.open();
    void this.readAccess();
  }

  async readAccess(): Promise<void> {
    try {
      const res = await fetch(api('access'), { cache: 'no-store' });
      if (res.status === 401) {
        // The read cookie is gone or stale: the page itself shows the sign-in.
        location.reload();
        return;
      }
      if (res.ok) {
        this.access = (await res.json()) as Access;
        this.emit({ kind: 'access' });
      }
    } catch {
      // Offline: the connection's own state says so; the next reconnection asks again.
    }
  }

  private setConnection(c: Connection): void {
    if (this.connection === c) return;
    this.connection = c;
    this.emit({ kind: 'connection' });
  }

  private open(): void {
    const es = new EventSource(api('events'));
    this.source = es;
    es.addEventListener('open', () => {
      this.backoffMs = 1_000;
      this.setConnection('live');
    });
    es.addEventListener('snapshot', (e) => {
      const status = JSON.parse((e as MessageEvent<string>).data) as Snapshot;
      this.clock(status.generatedAt);
      // A reconnection to a large installation keeps the pages loaded; they are read again on screen.
      if (!status.paged || !this.paged) {
        this.jobs.clear();
        this.leaseEnds.clear();
      }
      this.paged = status.paged ?? null;
      const at = Date.parse(status.generatedAt);
      for (const j of status.jobs) this.put(j, at);
      this.instances = status.instances;
      this.setExecutors(status.executors ?? []);
      this.loaded = true;
      this.setConnection('live');
      this.emit({ kind: 'snapshot' });
    });
    es.addEventListener('changes', (e) => {
      const c = JSON.parse((e as MessageEvent<string>).data) as Changes;
      this.clock(c.generatedAt);
      const at = Date.parse(c.generatedAt);
      for (const j of c.jobs) this.put(j, at);
      for (const id of c.removed) {
        this.jobs.delete(id);
        this.leaseEnds.delete(id);
      }
      if (c.instances) this.instances = c.instances;
      if (c.executors) this.setExecutors(c.executors);
      if (c.paged) this.paged = c.paged;
      this.emit({ kind: 'changes', ids: c.jobs.map((j) => j.id), removed: c.removed, instances: c.instances !== undefined, executors: c.executors !== undefined });
    });
    es.addEventListener('problem', (e) => {
      const p = JSON.parse((e as MessageEvent<string>).data) as { message: string | null };
      this.problem = p.message;
      this.emit({ kind: 'connection' });
    });
    es.addEventListener('error', () => {
      this.setConnection('reconnecting');
      if (es.readyState !== EventSource.CLOSED) return; // it retries by itself (after `retry:`)
      es.close();
      const wait = this.backoffMs;
      this.backoffMs = Math.min(this.backoffMs * 2, 15_000);
      window.setTimeout(() => {
        if (this.source !== es) return;
        void this.readAccess();
        this.open();
      }, wait);
    });
  }
}
