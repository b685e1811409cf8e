/**
 * A cached read of the cluster's status, with its JSON text: fresh for {@link FRESH_MS},
 * then served while one background read replaces it, up to {@link STALE_MS}; older than
 * that, callers wait for a new read. Concurrent callers share one read. With 1,000 jobs a
 * read costs tens of milliseconds; this keeps `GET /manage/jobs` fast under load while the
 * answer is never more than about a second behind Redis (stats themselves are batched).
 * @module
 */

/** A snapshot younger than this is served as it is, in ms. */
export const FRESH_MS = 250;
/** A snapshot younger than this is served while a new one is read, in ms. */
export const STALE_MS = 1_000;

/** A value and its JSON text. */
export interface Snapshot<T> {
  readonly value: T;
  readonly json: string;
  /** When the read finished (`Date.now()`). */
  readonly at: number;
}

/** The cache; see the module comment. */
export class SnapshotCache<T> {
  private current: Snapshot<T> | undefined;
  private reading: Promise<Snapshot<T>> | undefined;
  private generation = 0;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly onBackgroundError: (err: unknown) => void,
    private readonly freshMs = FRESH_MS,
    private readonly staleMs = STALE_MS,
  ) {}

  /** The snapshot to answer with now. */
  get(): Promise<Snapshot<T>> {
    const c = this.current;
    const age = c ? Date.now() - c.at : Infinity;
    if (c && age < this.freshMs) return Promise.resolve(c);
    const next = this.refresh();
    if (c && age < this.staleMs) {
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
    const reading: Promise<Snapshot<T>> = this.read()
      .then((value) => {
        const snap = { value, json: JSON.stringify(value), at: Date.now() };
        if (generation === this.generation) this.current = snap;
        return snap;
      })
      .finally(() => {
        if (this.reading === reading) this.reading = undefined;
      });
    this.reading = reading;
    return reading;
  }
}
