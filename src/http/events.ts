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
 * changed or appeared, the ids that went, the instances or the executors when they changed) and
 * `problem` (`{message}` while the status cannot be read, `{message: null}` once it can). Above
 * {@link PAGED_ABOVE} jobs, `snapshot` and `changes` carry `paged` (`{total, states}`) instead of
 * jobs (`event-paged.ts`). A `retry:` line tells EventSource how soon to reconnect, a comment
 * every {@link HEARTBEAT_MS} keeps proxies from closing an idle stream, and {@link
 * StatusEvents.close} ends every stream (at the runner's `stop()`), so no socket is left behind.
 *
 * Slow clients cannot exhaust the node's memory (`event-clients.ts`): a node serves at most
 * `maxClients` streams and answers others 503, each client's send buffer is bounded, and a
 * client that does not read is disconnected. {@link StatusEvents.figures} counts both.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { every, systemClock, type Repeating, type Timers } from '../clock.js';
import { errorMessage } from '../errors.js';
import type { ClusterStatus } from '../status/model.js';
import type { ExecutorsSource } from '../status/api.js';
import { StatusDiff } from './event-diff.js';
import { PAGED_ABOVE, PagedDiff, summarize } from './event-paged.js';
import { DEFAULT_MAX_CLIENTS, EventClients, STALL_MS, checkMaxClients, frame, unavailable, type EventClient, type EventStreamFigures, type Frame } from './event-clients.js';

export { DEFAULT_MAX_CLIENTS, checkMaxClients, type EventStreamFigures } from './event-clients.js';

/** How often the snapshot is looked at while a client listens, in ms (an identity check; Redis is read as the cache allows). */
export const POLL_MS = 250;
/** A comment line is sent this often, in ms (below the usual 30 to 60 s proxy read timeouts). */
export const HEARTBEAT_MS = 15_000;
/** How often the executors are read while a client listens, in ms (a read of Redis, so slower than the jobs' look). */
export const EXECUTORS_EVERY_MS = 1_000;
/** What EventSource is told to wait before reconnecting, in ms. */
export const RETRY_MS = 2_000;
/** The heartbeat, a comment line. */
const HEARTBEAT: Frame = Buffer.from(': keep-alive\n\n');
/** The first lines of every stream: how soon to reconnect, and a comment. */
const GREETING: Frame = Buffer.from(`retry: ${RETRY_MS}\n: leasehold status events\n\n`);

/** What the events need of the status layer. */
export interface StatusSource {
  cluster(): Promise<ClusterStatus>;
}

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
  /** Streams served at once; a client beyond them is answered 503. Default {@link DEFAULT_MAX_CLIENTS}. */
  readonly maxClients?: number;
  /** A client whose socket has taken nothing for this long is disconnected, in ms. Default {@link STALL_MS}. */
  readonly stallMs?: number;
  /** Above this many jobs the stream sends counts, not jobs. Default {@link PAGED_ABOVE}. */
  readonly pagedAbove?: number;
}

/** The event streams of one set of routes; see the module comment. */
export class StatusEvents {
  private readonly clients: EventClients;
  private readonly clock: Timers;
  private readonly pollMs: number;
  private readonly heartbeatMs: number;
  /** The `snapshot` frame of {@link current} (and the executors), made once for every client that needs it. */
  private snapshotFrame: { readonly of: ClusterStatus; readonly executors: readonly object[] | undefined; readonly frame: Frame } | undefined;
  private poll: Repeating | undefined;
  private heartbeat: Repeating | undefined;
  private current: ClusterStatus | undefined;
  private readonly diff = new StatusDiff();
  private readonly pagedDiff = new PagedDiff();
  /** Whether the clients were last sent counts instead of jobs (a large installation). */
  private paged = false;
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
    this.clients = new EventClients({
      maxClients: checkMaxClients(opts.maxClients ?? DEFAULT_MAX_CLIENTS, 'maxClients'),
      stallMs: opts.stallMs ?? STALL_MS,
      clock: () => this.clock.monotonic(),
      onCaughtUp: (c) => this.catchUp(c),
      onIdle: () => this.stopTimers(),
    });
  }

  /** The clients served now, and those refused and dropped since this was made. */
  figures(): EventStreamFigures {
    return this.clients.figures();
  }

  /** How many clients listen now. */
  get listening(): number {
    return this.clients.size;
  }

  /**
   * Serves one stream on a raw response the caller has taken over (fastify's `reply.hijack()`).
   * After {@link close}, and while `maxClients` streams are open, answers 503.
   */
  attach(req: IncomingMessage, res: ServerResponse): void {
    if (this.closed) return unavailable(res, 'this node is shutting down');
    const client = this.clients.admit(req, res);
    if (!client) return;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-store, no-transform',
      connection: 'keep-alive',
      // nginx passes each event on at once instead of buffering the stream.
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    });
    client.push(GREETING);
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
    this.clients.endAll();
  }

  private startTimers(): void {
    this.poll ??= every(this.clock, this.pollMs, () => {
      this.clients.dropStalled();
      void this.refresh();
    });
    this.heartbeat ??= every(this.clock, this.heartbeatMs, () => this.clients.broadcast(HEARTBEAT));
  }

  /** Sends a client that fell behind and caught up the whole status, and the problem if there is one. */
  private catchUp(client: EventClient): void {
    if (!this.clients.has(client)) return;
    const snapshot = this.snapshot();
    if (snapshot) client.push(snapshot);
    if (this.problem !== null) client.push(frame('problem', { message: this.problem }));
  }

  private stopTimers(): void {
    this.poll?.stop();
    this.heartbeat?.stop();
    this.poll = undefined;
    this.heartbeat = undefined;
    // Without listeners nothing is tracked: the next client starts from a fresh read.
    this.current = undefined;
    this.diff.reset();
    this.pagedDiff.reset();
    this.executors = undefined;
    this.executorsText = '';
    this.executorsReadAt = -Infinity;
    this.snapshotFrame = undefined;
  }

  /** Sends a new client the whole status, from the last read or a new one. */
  private async greet(client: EventClient): Promise<void> {
    const problem = this.problem;
    if (!this.current) await this.refresh();
    if (!this.clients.has(client)) return;
    const snapshot = client.synced ? undefined : this.snapshot();
    if (snapshot) {
      client.push(snapshot);
      client.synced = true;
    }
    // A problem found by this very read went to every client already.
    if (problem !== null && problem === this.problem) client.send(frame('problem', { message: problem }));
  }

  /** Reads the snapshot (one read at a time) and sends what changed. */
  private refresh(): Promise<void> {
    this.reading ??= this.read().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  /** The `snapshot` frame of the last read: the status, with the executors when there is a source. */
  private snapshot(): Frame | undefined {
    const status = this.current;
    if (!status) return undefined;
    const cached = this.snapshotFrame;
    if (cached?.of === status && cached.executors === this.executors) return cached.frame;
    const jobs = this.paged ? { jobs: [], paged: summarize(status) } : {};
    const data = this.opts.executors || this.paged ? { ...status, ...jobs, ...(this.opts.executors ? { executors: this.executors ?? [] } : {}) } : status;
    this.snapshotFrame = { of: status, executors: this.executors, frame: frame('snapshot', data) };
    return this.snapshotFrame.frame;
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
        this.clients.broadcast(frame('problem', { message }));
      }
      return;
    }
    if (this.problem !== null) {
      this.problem = null;
      this.clients.broadcast(frame('problem', { message: null }));
    }
    if (this.clients.size === 0) return;
    if (status === this.current) {
      if (executorsChanged) this.sendExecutors(status.generatedAt);
      return;
    }
    const paged = status.jobs.length > (this.opts.pagedAbove ?? PAGED_ABOVE);
    // The installation crossed the size of a snapshot: every client starts again from one.
    const first = this.current === undefined || paged !== this.paged;
    this.current = status;
    this.paged = paged;
    const { jobs, removed, instances } = paged ? { jobs: [], removed: [], instances: undefined } : this.diff.next(status);
    const counts = paged ? this.pagedDiff.next(status) : undefined;
    const executors = executorsChanged ? this.executors : undefined;
    const now = counts?.instances ?? instances;
    const changes = first || (jobs.length === 0 && removed.length === 0 && now === undefined && executors === undefined && counts?.summary === undefined)
      ? undefined
      : frame('changes', { generatedAt: status.generatedAt, jobs, removed, ...(now ? { instances: now } : {}), ...(executors ? { executors } : {}), ...(counts?.summary ? { paged: counts.summary } : {}) });
    if (first) (paged ? this.diff : this.pagedDiff).reset();
    for (const c of this.clients) {
      if (c.synced && !first) {
        if (changes !== undefined) c.send(changes);
      } else {
        // A client that connected while the status could not be read gets it now (or all, after a crossing).
        const snapshot = this.snapshot();
        if (snapshot) c.push(snapshot);
        c.synced = true;
      }
    }
  }

  /** Sends the executors alone (the jobs did not change). */
  private sendExecutors(generatedAt: string): void {
    const text = frame('changes', { generatedAt, jobs: [], removed: [], executors: this.executors ?? [] });
    for (const c of this.clients) if (c.synced) c.send(text);
  }
}
