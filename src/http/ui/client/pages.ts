/**
 * The overview's jobs of a large installation: when the event stream sends counts instead of
 * jobs (above 2,000 jobs), the page reads the jobs from `GET /manage/jobs?limit=`, a page at a
 * time in id order, with the search and the state filter as `q` and `state` (searched on the
 * server); the next page is read as the end of the list comes near (or on "Load more"), and
 * the pages on screen are read again every {@link REFRESH_MS}, so what is shown stays live
 * while a hundred thousand jobs are never sent whole.
 * @module
 */
import { h } from './dom.js';
import { api, type Store } from './store.js';
import type { JobsPage } from './types.js';

/** Jobs of the first page: few, so the first screen comes fast. */
const FIRST_PAGE = 100;
/** Jobs of each further page. */
const PAGE_SIZE = 500;
/** How often the pages on screen are read again, in ms. */
export const REFRESH_MS = 2_000;
/** A page read again asks for this many jobs more than it holds, for jobs added meanwhile. */
const SLACK = 50;
/** The next page is read when the end of the list is this close to the screen, in px. */
const AHEAD_PX = 1_200;

/** A page read: the ids after `after` up to `last` (open at the end of the list). */
interface Chunk {
  readonly after: string | null;
  readonly last: string | null;
  ids: string[];
}

/** Where a row is against the screen, as an IntersectionObserver last saw it. */
type Side = 'above' | 'in' | 'below';

/** What the overview's search and state filter ask for. */
export interface PagerQuery {
  readonly q: string;
  readonly state: string;
}

/** What the pager needs of the overview. */
export interface PagerHooks {
  /** The search and the state filter now. */
  query(): PagerQuery;
  /** Jobs read (now in the store) and ids gone (removed from it). */
  changed(ids: readonly string[], removed: readonly string[]): void;
  /** The row of a job shown. */
  row(id: string): HTMLElement | undefined;
}

/** The pages of a large installation; see the module comment. */
export class Pager {
  /** The foot of the list: how many are shown, and "Load more". */
  readonly el: HTMLElement;
  /** How many jobs match the query, as the last page read said. */
  total = 0;
  private chunks: Chunk[] = [];
  /** The cursor of the next page; null at the end; undefined before the first read. */
  private nextCursor: string | null | undefined;
  private loading: Promise<void> | undefined;
  private generation = 0;
  private error: string | null = null;
  private readonly text = h('span', { class: 'muted', id: 'jobs-shown', 'aria-live': 'polite' });
  private readonly button = h('button', { type: 'button', id: 'load-more', hidden: true }, 'Load more');
  private timer: number | undefined;
  /** Whether the foot of the list is near the screen. */
  private near = false;
  /**
   * Where the first and last rows of each page are (only those are watched, so the screen
   * is known without asking the browser to lay out twenty thousand rows).
   */
  private readonly sides = new Map<Element, Side>();
  private readonly watch = new IntersectionObserver((entries) => {
    for (const e of entries) {
      const root = e.rootBounds;
      const r = e.boundingClientRect;
      this.sides.set(e.target, e.isIntersecting || !root ? 'in' : r.bottom <= root.top ? 'above' : 'below');
    }
  });

  constructor(
    private readonly store: Store,
    private readonly hooks: PagerHooks,
  ) {
    this.button.addEventListener('click', () => void this.more());
    this.el = h('div', { class: 'pager', hidden: true }, this.text, ' ', this.button);
    new IntersectionObserver((seen) => {
      this.near = seen.some((e) => e.isIntersecting);
      if (this.near) void this.more();
    }, { rootMargin: `${AHEAD_PX}px 0px` }).observe(this.el);
  }

  /** Whether a page was read since the last {@link reset}. */
  get started(): boolean {
    return this.nextCursor !== undefined;
  }

  /** Forgets what was read and, for a large installation, reads the first page of the query. */
  reset(): Promise<void> {
    this.generation++;
    const removed = [...this.store.jobs.keys()];
    this.store.jobs.clear();
    this.store.leaseEnds.clear();
    this.chunks = [];
    this.nextCursor = undefined;
    this.loading = undefined;
    this.total = 0;
    this.watch.disconnect();
    this.sides.clear();
    this.hooks.changed([], removed);
    if (!this.store.paged) {
      this.stop();
      this.render();
      return Promise.resolve();
    }
    this.timer ??= window.setInterval(() => void this.refresh(), REFRESH_MS);
    return this.more();
  }

  /** Stops reading (the installation is small again: the stream sends every job). */
  stop(): void {
    if (this.timer !== undefined) window.clearInterval(this.timer);
    this.timer = undefined;
    this.generation++;
    this.chunks = [];
    this.nextCursor = undefined;
    this.render();
  }

  /** Reads the next page, one read at a time. */
  more(): Promise<void> {
    if (!this.store.paged || this.nextCursor === null) return Promise.resolve();
    if (this.loading) return this.loading;
    const loading: Promise<void> = this.readNext().finally(() => {
      if (this.loading !== loading) return; // forgotten by a reset
      this.loading = undefined;
      // Still near the screen (a short page, a tall window): read on.
      if (this.nextCursor && this.near) window.requestAnimationFrame(() => void (this.near && this.more()));
    });
    this.loading = loading;
    return loading;
  }

  private url(after: string | null, limit: number): string {
    const { q, state } = this.hooks.query();
    const p = new URLSearchParams({ limit: String(limit) });
    if (after !== null) p.set('cursor', after);
    if (q) p.set('q', q);
    if (state) p.set('state', state);
    return api(`jobs?${p.toString()}`);
  }

  private async read(after: string | null, limit: number): Promise<JobsPage | undefined> {
    try {
      const res = await fetch(this.url(after, limit), { cache: 'no-store' });
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as { message?: string };
        this.error = body.message ?? `${res.status} ${res.statusText}`;
        return undefined;
      }
      this.error = null;
      return (await res.json()) as JobsPage;
    } catch (err) {
      this.error = err instanceof Error ? err.message : String(err);
      return undefined;
    } finally {
      this.render();
    }
  }

  private keep(page: JobsPage, jobs: JobsPage['jobs']): string[] {
    const at = Date.parse(page.generatedAt);
    for (const j of jobs) this.store.put(j, at);
    this.total = page.total;
    return jobs.map((j) => j.id);
  }

  private async readNext(): Promise<void> {
    const generation = this.generation;
    const after = this.nextCursor ?? null;
    const page = await this.read(after, after === null ? FIRST_PAGE : PAGE_SIZE);
    if (!page || generation !== this.generation) return;
    const ids = this.keep(page, page.jobs);
    const chunk = { after, last: page.nextCursor === null ? null : (ids.at(-1) ?? null), ids };
    this.chunks.push(chunk);
    this.nextCursor = page.nextCursor;
    this.hooks.changed(ids, []);
    this.watchEnds(chunk);
    this.render();
    if (after === null) performance.mark('leasehold:first-page', { detail: page.total });
  }

  /** Reads again the pages with a row on screen (not while a page is being read, nor in a hidden tab). */
  async refresh(): Promise<void> {
    if (this.loading || !this.store.paged || document.visibilityState === 'hidden') return;
    const generation = this.generation;
    for (const chunk of this.chunks) {
      if (!this.onScreen(chunk)) continue;
      const page = await this.read(chunk.after, Math.min(1_000, chunk.ids.length + SLACK));
      if (!page || generation !== this.generation) return;
      const last = chunk.last;
      const ids = this.keep(page, last === null ? page.jobs : page.jobs.filter((j) => j.id <= last));
      const now = new Set(ids);
      const removed = chunk.ids.filter((id) => !now.has(id));
      for (const id of removed) {
        this.store.jobs.delete(id);
        this.store.leaseEnds.delete(id);
      }
      const ends = [chunk.ids[0], chunk.ids.at(-1)];
      chunk.ids = ids;
      this.hooks.changed(ids, removed);
      // The rows were made anew: watch the new ends.
      for (const id of ends) for (const [el] of this.sides) if ((el as HTMLElement).dataset['jobId'] === id) this.forget(el);
      this.watchEnds(chunk);
    }
    this.render();
  }

  private watchEnds(chunk: Chunk): void {
    for (const id of [chunk.ids[0], chunk.ids.at(-1)]) {
      const row = id === undefined ? undefined : this.hooks.row(id);
      if (row && !this.sides.has(row)) {
        this.sides.set(row, 'below');
        this.watch.observe(row);
      }
    }
  }

  private forget(el: Element): void {
    this.watch.unobserve(el);
    this.sides.delete(el);
  }

  private side(id: string | undefined): Side | undefined {
    const row = id === undefined ? undefined : this.hooks.row(id);
    return row ? this.sides.get(row) : undefined;
  }

  /** Whether a page has a row on screen: an end on it, or one end above and the other below. */
  private onScreen(chunk: Chunk): boolean {
    const first = this.side(chunk.ids[0]);
    const last = this.side(chunk.ids.at(-1));
    return first === 'in' || last === 'in' || (first === 'above' && last === 'below');
  }

  /** The ids of the pages with a row on screen, as a range (for the clock's tick); null when none. */
  shownRange(): { from: string; to: string } | null {
    const on = this.chunks.filter((c) => c.ids.length > 0 && this.onScreen(c));
    const from = on[0]?.ids[0];
    const to = on.at(-1)?.ids.at(-1);
    return from === undefined || to === undefined ? null : { from, to };
  }

  private render(): void {
    this.el.hidden = !this.store.paged;
    let shown = 0;
    for (const c of this.chunks) shown += c.ids.length;
    this.button.hidden = this.nextCursor === null || this.nextCursor === undefined;
    this.text.textContent = this.error !== null
      ? `The jobs cannot be read now: ${this.error}.`
      : this.nextCursor === undefined
        ? 'Loading…'
        : this.total === 0
          ? 'No job matches.'
          : `${shown.toLocaleString('en-US')} of ${this.total.toLocaleString('en-US')} shown${this.nextCursor === null ? '' : ': scroll for more'}`;
  }
}


/** For the clock's tick of a large installation: whether an element sits in a job's row of a page off screen. */
export function offScreen(range: { from: string; to: string } | null): (el: HTMLElement) => boolean {
  return (el) => {
    const id = el.closest<HTMLElement>('tr[data-job-id]')?.dataset['jobId'];
    return id !== undefined && (range === null || id < range.from || id > range.to);
  };
}
