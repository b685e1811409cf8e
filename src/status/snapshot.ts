/**
 * A cached read of the cluster's status, with its JSON text. A snapshot is fresh for
 * {@link FRESH_MS}, or ten times as long as it took to read if that is longer (so reading
 * never takes more than a tenth of a node's time, even with many thousands of jobs); after
 * that it is still served, for up to {@link STALE_MS} more, while one background read
 * replaces it; older than that, callers wait for a new read. Concurrent callers share one
 * read. This keeps `GET /manage/jobs` fast under load, and its answer about half a second
 * behind Redis with a thousand jobs (the stats themselves are batched too).
 * @module
 */
import { systemClock, type Timers } from '../clock.js';

/** A snapshot younger than this is served as it is, in ms. */
const FRESH_MS = 500;
/** After its freshness, a snapshot is served this much longer while a new one is read, in ms. */
const STALE_MS = 2_000;
/** A snapshot stays fresh for at least this many times its read time. */
const READ_SHARE = 10;

/** A value and its JSON text, UTF-8 encoded. */
export interface Snapshot<T> {
  readonly value: T;
  /**
   * Encoded once, when first asked for: a socket writes a large buffer about four times as fast
   * as the same text (S4). Pages are cut from the value, and an installation too large for one
   * answer never asks: its snapshots hold no text (at 100,000 jobs, 70 MB and a second of a
   * node's time per read).
   */
  readonly json: Buffer;
  /** When the read finished (the clock's monotonic ms). */
  readonly at: number;
  /** How long the read took, in ms. */
  readonly readMs: number;
}

/** How a {@link SnapshotCache} keeps its snapshots. */
export interface SnapshotOptions<T> {
  /** A snapshot younger than this is served as it is, in ms (default {@link FRESH_MS}). */
  readonly freshMs?: number;
  /** After its freshness, how much longer it is served while a new one is read, in ms (default {@link STALE_MS}). */
  readonly staleMs?: number;
  /**
   * Whether a new snapshot's JSON text is made as soon as it is read (in the next turn) rather
   * than by the first caller that asks for it: for values that are answered whole.
   */
  readonly encodeAhead?: (value: T) => boolean;
}

/** The cache; see the module comment. */
export class SnapshotCache<T> {
  private current: Snapshot<T> | undefined;
  private reading: Promise<Snapshot<T>> | undefined;
  private generation = 0;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly onBackgroundError: (err: unknown) => void,
    private readonly clock: Timers = systemClock,
    private readonly opts: SnapshotOptions<T> = {},
  ) {}

  /** The snapshot to answer with now. */
  get(): Promise<Snapshot<T>> {
    const c = this.current;
    const age = c ? this.clock.monotonic() - c.at : Infinity;
    const fresh = c ? Math.max(this.opts.freshMs ?? FRESH_MS, READ_SHARE * c.readMs) : 0;
    if (c && age < fresh) return Promise.resolve(c);
    const next = this.refresh();
    if (c && age < fresh + (this.opts.staleMs ?? STALE_MS)) {
      next.catch(this.onBackgroundError);
      return Promise.resolve(c);
    }
    return next;
  }

  /** Forgets the snapshot (after a change this node made), so the next call reads anew. */
  invalidate(): void {
    this.current = undefined;
    this.reading = undefined; // a read in flight may predate the change: the next caller starts anew
    this.generation++;
  }

  private refresh(): Promise<Snapshot<T>> {
    if (this.reading) return this.reading;
    const generation = this.generation;
    const started = this.clock.monotonic();
    const reading: Promise<Snapshot<T>> = this.read()
      .then((value) => {
        const at = this.clock.monotonic();
        const snap = snapshotOf(value, at, at - started);
        if (generation === this.generation) this.current = snap;
        // Made in a turn of its own once the read is in, so that no request waits for the text.
        if (this.opts.encodeAhead?.(value) === true) setImmediate(() => snap.json);
        return snap;
      })
      .finally(() => {
        if (this.reading === reading) this.reading = undefined;
      });
    this.reading = reading;
    return reading;
  }
}

/** A snapshot whose JSON text is made on first use, once. */
function snapshotOf<T>(value: T, at: number, readMs: number): Snapshot<T> {
  let json: Buffer | undefined;
  return {
    value,
    get json(): Buffer {
      json ??= Buffer.from(JSON.stringify(value));
      return json;
    },
    at,
    readMs,
  };
}
