/**
 * The clients of a node's event streams, so that slow ones cannot exhaust its memory.
 *
 * A node serves at most `maxClients` streams (default {@link DEFAULT_MAX_CLIENTS}); a client
 * beyond them is answered 503 with the reason, and its connection closed.
 *
 * Each client's send buffer is bounded. Frames are encoded once and shared by every client: a
 * client's queue holds slices of them (references, not copies), and its socket is handed one
 * slice of at most {@link SLICE_BYTES} at a time, the next once the kernel took the last, so
 * each slice taken shows that the client reads. A client with more than
 * {@link MAX_QUEUED_BYTES} not yet taken is behind: what changes meanwhile is not queued for
 * it, and once it has taken what it had it is sent the whole status again. A client whose
 * socket has taken nothing for `stallMs` (default {@link STALL_MS}) does not read: its socket
 * is destroyed. The kernel's buffers take a few MB first, so on a node whose status changes
 * little that comes later.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCodes, LeaseholdError } from '../errors.js';

/** How many streams a node serves at once by default; beyond, `GET /manage/events` answers 503. */
export const DEFAULT_MAX_CLIENTS = 100;
/** A client whose socket has taken nothing for this long, in ms, does not read: it is disconnected. */
export const STALL_MS = 3_000;
/** The largest piece of a frame handed to a socket at once, in bytes. */
export const SLICE_BYTES = 64 * 1024;
/**
 * A client with more than this not yet taken by its socket, in bytes, is sent no more changes
 * until it has caught up (then the whole status). Its queue holds at most this plus one frame.
 */
export const MAX_QUEUED_BYTES = 1024 * 1024;

/** An event-stream frame, encoded once for every client. */
export type Frame = Buffer;

/** A frame of `event` with `data` as JSON. */
export function frame(event: string, data: unknown): Frame {
  return Buffer.from(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** The clients of a node's event streams: those served now, and those refused or dropped so far. */
export interface EventStreamFigures {
  /** Streams open now. */
  readonly clients: number;
  /** Clients answered 503 because `maxClients` streams were open. */
  readonly refused: number;
  /** Clients disconnected because their socket took nothing for the stall time. */
  readonly dropped: number;
}

/**
 * Checks a cap of event streams: a whole number from 1 to 100,000.
 * @throws LeaseholdError `invalidConfig` naming `name`.
 */
export function checkMaxClients(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1 || value > 100_000) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `${name}: ${String(value)} is not a whole number from 1 to 100000`);
  }
  return value;
}

/** Answers 503 with the routes' problem body, and closes the connection. */
export function unavailable(res: ServerResponse, message: string): void {
  res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '2', connection: 'close' });
  res.end(JSON.stringify({ statusCode: 503, error: 'Service Unavailable', message }));
}

/** One client's stream; see the module comment. */
export class EventClient {
  /** False until its `snapshot` is sent; changes are sent only after it. */
  synced = false;
  /** Slices not yet handed to the socket. */
  private readonly queue: Buffer[] = [];
  /** Bytes queued or handed to the socket and not yet taken by the kernel. */
  private queued = 0;
  /** A slice is with the socket, not yet taken. */
  private writing = false;
  /** A frame was skipped: the whole status is owed once the queue is empty. */
  private missed = false;
  /** When the socket last took a slice (or was handed one while idle), on the monotonic clock. */
  private progressAt = 0;
  private ended = false;

  /**
   * @param res the response the stream is written to.
   * @param clock the monotonic clock, in ms.
   * @param onCaughtUp called once a client that missed frames has taken all it had: send it the status.
   */
  constructor(
    readonly res: ServerResponse,
    private readonly clock: () => number,
    private readonly onCaughtUp: (client: EventClient) => void,
  ) {}

  /** Whether it has anything not yet taken by its socket. */
  get busy(): boolean {
    return this.writing || this.queue.length > 0;
  }

  /** Queues a frame, unless the client is behind (then it is owed the whole status instead). */
  send(f: Frame): void {
    if (this.queued > MAX_QUEUED_BYTES) {
      this.missed = true;
      return;
    }
    this.push(f);
  }

  /** Queues a frame even when behind: the status that catches a client up, or its greeting. */
  push(f: Frame): void {
    if (this.ended) return;
    for (let i = 0; i < f.length; i += SLICE_BYTES) this.queue.push(f.subarray(i, i + SLICE_BYTES));
    this.queued += f.length;
    this.pump();
  }

  /** Whether a slice has been with the socket for `stallMs` or more, untaken: the client does not read. */
  stalled(stallMs: number): boolean {
    return this.writing && this.clock() - this.progressAt >= stallMs;
  }

  /** Stops writing (the stream ended or its socket is gone); what was queued is let go. */
  end(): void {
    this.ended = true;
    this.queue.length = 0;
    this.queued = 0;
  }

  private pump(): void {
    if (this.writing || this.ended) return;
    const slice = this.queue.shift();
    if (slice === undefined) {
      if (!this.missed) return;
      this.missed = false;
      this.onCaughtUp(this);
      return;
    }
    this.writing = true;
    this.progressAt = this.clock();
    this.res.write(slice, (err) => {
      this.writing = false;
      this.queued -= slice.length;
      // A write that failed is the socket's end, which the owner hears of through 'close'.
      if (err) this.end();
      else this.pump();
    });
  }
}

/** Options of {@link EventClients}. */
export interface EventClientsOptions {
  /** Streams served at once. */
  readonly maxClients: number;
  /** A client whose socket has taken nothing for this long is disconnected, in ms. */
  readonly stallMs: number;
  /** The monotonic clock, in ms. */
  readonly clock: () => number;
  /** Called once a client that missed frames has caught up: send it the whole status. */
  readonly onCaughtUp: (client: EventClient) => void;
  /** Called when the last client went. */
  readonly onIdle: () => void;
}

/** The clients served now, with the cap and the stall rule; see the module comment. */
export class EventClients implements Iterable<EventClient> {
  private readonly clients = new Set<EventClient>();
  private refused = 0;
  private dropped = 0;

  constructor(private readonly opts: EventClientsOptions) {}

  get size(): number {
    return this.clients.size;
  }

  [Symbol.iterator](): Iterator<EventClient> {
    return this.clients[Symbol.iterator]();
  }

  has(client: EventClient): boolean {
    return this.clients.has(client);
  }

  /** The clients served now, and those refused and dropped so far. */
  figures(): EventStreamFigures {
    return { clients: this.clients.size, refused: this.refused, dropped: this.dropped };
  }

  /**
   * Takes a client whose response is an event stream (its headers not yet sent): undefined, and
   * the client answered 503, when `maxClients` streams are open.
   */
  admit(req: IncomingMessage, res: ServerResponse): EventClient | undefined {
    if (this.clients.size >= this.opts.maxClients) {
      this.refused++;
      unavailable(res, `this node serves at most ${this.opts.maxClients} event streams at once (LEASEHOLD_EVENTS_MAX_CLIENTS, or the eventsMaxClients option) and all are open; try again later`);
      return undefined;
    }
    const client = new EventClient(res, this.opts.clock, this.opts.onCaughtUp);
    this.clients.add(client);
    const drop = (): void => this.drop(client);
    req.once('close', drop);
    res.once('close', drop);
    res.once('error', drop);
    return client;
  }

  /** Sends a frame to every client (skipped for those behind). */
  broadcast(f: Frame): void {
    for (const c of this.clients) c.send(f);
  }

  /** Disconnects the clients whose socket took nothing for the stall time. */
  dropStalled(): void {
    for (const c of [...this.clients]) {
      if (!c.stalled(this.opts.stallMs)) continue;
      this.dropped++;
      this.drop(c);
      c.res.destroy();
    }
  }

  /** Ends every stream: EventSource reconnects, maybe to another node. */
  endAll(): void {
    for (const c of [...this.clients]) {
      this.drop(c);
      // A socket that does not take what it has would hold its end forever.
      if (c.busy) c.res.destroy();
      else c.res.end();
    }
  }

  private drop(client: EventClient): void {
    if (!this.clients.delete(client)) return;
    client.end();
    if (this.clients.size === 0) this.opts.onIdle();
  }
}
