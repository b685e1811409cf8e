/**
 * `GET /manage/events`: the cluster's status as server-sent events, for the status page.
 *
 * While at least one client listens, the node re-reads its cached cluster snapshot (the one
 * `GET /manage/jobs` serves) every {@link POLL_MS}, and when it changed sends the jobs that
 * changed. Polling the snapshot rather than listening to the runner's events is deliberate:
 * a run that ends on another node emits no event here, and the snapshot is the cluster's view
 * from any node; its cache already bounds how often Redis is read (at most one read per
 * half second, or per ten read times), shared with `GET /manage/jobs`. With no client, no
 * timer runs and nothing is read.
 *
 * The executors of background tasks ride along: with an `executors` source, they are read at
 * most every {@link EXECUTORS_EVERY_MS} (their figures from other nodes change every few seconds
 * anyway) and sent whole when any figure changed.
 *
 * Events: `snapshot` (the whole status, first on every connection, with `executors` when there
 * is a source), `changes` (`{generatedAt, jobs, removed, instances?, executors?}`: the jobs that
 * changed or appeared, the ids that went, and the instances or the executors when they changed)
 * and `problem` (`{message}` while the status cannot be read,
 * `{message: null}` once it can). A `retry:` line tells EventSource how soon to reconnect, a
 * comment line every {@link HEARTBEAT_MS} keeps proxies from closing an idle stream, and
 * {@link StatusEvents.close} ends every stream (the runner's `stop()` and fastify's close call
 * it), so no socket is left behind.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { every, systemClock, type Repeating, type Timers } from '../clock.js';
import { errorMessage } from '../errors.js';
import type { ClusterStatus, InstanceStatus, JobStatus } from '../status/model.js';

/**
 * How often the snapshot is looked at while a client listens, in ms. Looking costs an identity
 * check; Redis is read only as often as the snapshot's cache allows (it is fresh for 500 ms),
 * so a faster look only shortens the wait for what a read brought.
 */
export const POLL_MS = 250;
/** A comment line is sent this often, in ms (below the usual 30 to 60 s proxy read timeouts). */
export const HEARTBEAT_MS = 15_000;
/** How often the executors are read while a client listens, in ms (a read of Redis, so slower than the jobs' look). */
export const EXECUTORS_EVERY_MS = 1_000;
/** What EventSource is told to wait before reconnecting, in ms. */
export const RETRY_MS = 2_000;
/** A client that has this much unsent is too slow: its stream is ended (it reconnects and gets a snapshot). */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** A lease's end moving by less than this is the read's jitter, not an extension, in ms. */
const LEASE_JITTER_MS = 1_000;

/** What the events need of the status layer. */
export interface StatusSource {
  cluster(): Promise<ClusterStatus>;
}

/** The cluster's executors of background tasks (the rows `GET /manage/executors` lists). */
export type ExecutorsSource = () => Promise<readonly object[]>;

/** Options of {@link StatusEvents}. */
export interface StatusEventsOptions {
  readonly api: StatusSource;
  /** Timers; default the system's. */
  readonly clock?: Timers;
  /** Told about reads that fail (they also go to the clients as `problem`). */
  readonly onReadError?: (err: unknown) => void;
  /** The executors, sent with the jobs; without it none are sent. */
  readonly executors?: ExecutorsSource;
  readonly pollMs?: number;
  readonly executorsEveryMs?: number;
  readonly heartbeatMs?: number;
}

interface Client {
  readonly res: ServerResponse;
  /** False until its `snapshot` is sent; changes are sent only after it. */
  synced: boolean;
}

/** What is known of a job at the last read, to tell whether it changed. */
interface Seen {
  readonly text: string;
  readonly leaseEnd: number | null;
}

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
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

/** The event streams of one set of routes; see the module comment. */
export class StatusEvents {
  private readonly clients = new Set<Client>();
  private readonly clock: Timers;
  private readonly pollMs: number;
  private readonly heartbeatMs: number;
  private poll: Repeating | undefined;
  private heartbeat: Repeating | undefined;
  private current: ClusterStatus | undefined;
  private seenJobs = new Map<string, Seen>();
  private instancesText = '';
  private executors: readonly object[] | undefined;
  private executorsText = '';
  private executorsReadAt = -Infinity;
  private reading: Promise<void> | undefined;
  private problem: string | null = null;
  private closed = false;

  constructor(private readonly opts: StatusEventsOptions) {
    this.clock = opts.clock ?? systemClock;
    this.pollMs = opts.pollMs ?? POLL_MS;
    this.heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS;
  }

  /** How many clients listen now. */
  get listening(): number {
    return this.clients.size;
  }

  /**
   * Serves one stream on a raw response the caller has taken over (fastify's `reply.hijack()`).
   * After {@link close}, answers 503.
   */
  attach(req: IncomingMessage, res: ServerResponse): void {
    if (this.closed) {
      res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '2' });
      res.end(JSON.stringify({ statusCode: 503, error: 'Service Unavailable', message: 'this node is shutting down' }));
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-store, no-transform',
      connection: 'keep-alive',
      // nginx passes each event on at once instead of buffering the stream.
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    });
    res.write(`retry: ${RETRY_MS}\n: leasehold status events\n\n`);
    const client: Client = { res, synced: false };
    this.clients.add(client);
    const drop = (): void => this.drop(client);
    req.once('close', drop);
    res.once('close', drop);
    res.once('error', drop);
    this.startTimers();
    void this.greet(client);
  }

  /** Ends every stream and stops the timers; later connections get 503 (the runner stopped). */
  close(): void {
    this.closed = true;
    this.endStreams();
  }

  /** Ends the streams open now (their server is closing); EventSource reconnects, maybe elsewhere. */
  endStreams(): void {
    for (const c of [...this.clients]) {
      this.drop(c);
      c.res.end();
    }
  }

  private drop(client: Client): void {
    if (!this.clients.delete(client)) return;
    if (this.clients.size === 0) this.stopTimers();
  }

  private startTimers(): void {
    this.poll ??= every(this.clock, this.pollMs, () => void this.refresh());
    this.heartbeat ??= every(this.clock, this.heartbeatMs, () => this.broadcast(': keep-alive\n\n'));
  }

  private stopTimers(): void {
    this.poll?.stop();
    this.heartbeat?.stop();
    this.poll = undefined;
    this.heartbeat = undefined;
    // Without listeners nothing is tracked: the next client starts from a fresh read.
    this.current = undefined;
    this.seenJobs = new Map();
    this.instancesText = '';
    this.executors = undefined;
    this.executorsText = '';
    this.executorsReadAt = -Infinity;
  }

  /** Sends a new client the whole status, from the last read or a new one. */
  private async greet(client: Client): Promise<void> {
    const problem = this.problem;
    if (!this.current) await this.refresh();
    if (!this.clients.has(client)) return;
    if (this.current && !client.synced) {
      this.write(client, frame('snapshot', this.snapshotOf(this.current)));
      client.synced = true;
    }
    // A problem found by this very read went to every client already.
    if (problem !== null && problem === this.problem) this.write(client, frame('problem', { message: problem }));
  }

  /** Reads the snapshot (one read at a time) and sends what changed. */
  private refresh(): Promise<void> {
    this.reading ??= this.read().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  /** The status as the `snapshot` event carries it: with the executors when there is a source. */
  private snapshotOf(status: ClusterStatus): ClusterStatus & { executors?: readonly object[] } {
    return this.opts.executors ? { ...status, executors: this.executors ?? [] } : status;
  }

  /**
   * Reads the executors when the last read is old enough; true when they changed. A failed read
   * keeps the last figures (the jobs' read says when Redis is unreachable).
   */
  private async readExecutors(): Promise<boolean> {
    const source = this.opts.executors;
    const now = this.clock.monotonic();
    if (!source || now - this.executorsReadAt < (this.opts.executorsEveryMs ?? EXECUTORS_EVERY_MS)) return false;
    this.executorsReadAt = now;
    try {
      const rows = await source();
      const text = JSON.stringify(rows);
      if (text === this.executorsText) return false;
      this.executorsText = text;
      this.executors = rows;
      return true;
    } catch (err) {
      this.opts.onReadError?.(err);
      return false;
    }
  }

  private async read(): Promise<void> {
    let status: ClusterStatus;
    let executorsChanged: boolean;
    try {
      [status, executorsChanged] = await Promise.all([this.opts.api.cluster(), this.readExecutors()]);
    } catch (err) {
      // The executors read beside it is sent again with the next good read.
      this.executorsText = '';
      this.executorsReadAt = -Infinity;
      const message = errorMessage(err);
      if (message !== this.problem) {
        this.problem = message;
        this.opts.onReadError?.(err);
        this.broadcast(frame('problem', { message }));
      }
      return;
    }
    if (this.problem !== null) {
      this.problem = null;
      this.broadcast(frame('problem', { message: null }));
    }
    if (this.clients.size === 0) return;
    if (status === this.current) {
      if (executorsChanged) this.sendExecutors(status.generatedAt);
      return;
    }
    const first = this.current === undefined;
    this.current = status;
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
    const instances: InstanceStatus[] | undefined = instancesText === this.instancesText ? undefined : status.instances;
    this.instancesText = instancesText;
    const executors = executorsChanged ? this.executors : undefined;
    const changes = first || (jobs.length === 0 && removed.length === 0 && instances === undefined && executors === undefined)
      ? undefined
      : frame('changes', { generatedAt: status.generatedAt, jobs, removed, ...(instances ? { instances } : {}), ...(executors ? { executors } : {}) });
    let snapshot: string | undefined;
    for (const c of this.clients) {
      if (c.synced) {
        if (changes !== undefined) this.write(c, changes);
      } else {
        // A client that connected while the status could not be read gets it now.
        snapshot ??= frame('snapshot', this.snapshotOf(status));
        this.write(c, snapshot);
        c.synced = true;
      }
    }
  }

  /** Sends the executors alone (the jobs did not change). */
  private sendExecutors(generatedAt: string): void {
    const text = frame('changes', { generatedAt, jobs: [], removed: [], executors: this.executors ?? [] });
    for (const c of this.clients) if (c.synced) this.write(c, text);
  }

  private broadcast(text: string): void {
    for (const c of this.clients) this.write(c, text);
  }

  private write(client: Client, text: string): void {
    if (client.res.writableLength > MAX_BUFFERED_BYTES) {
      this.drop(client);
      client.res.end();
      return;
    }
    client.res.write(text);
  }
}
