/**
 * The overview: a summary by state, a search and filters, every job as a row
 * (`data-job-id`), the live instances, and the executors of background tasks. Rows are
 * built once and replaced one by one when their job changes, so a thousand jobs render fast
 * and stay cheap to keep live. A large installation's jobs come a page at a time (`pages.ts`),
 * searched and filtered on the server.
 * @module
 */
import { h, fill } from './dom.js';
import { ExecutorsView } from './executors.js';
import { Pager, offScreen } from './pages.js';
import { duration } from './format.js';
import { agoEl, countersLine, dueEl, jobHref, outcomeBadge, scheduleEl, stateBadge, stateText, STATES, timeText } from './parts.js';
import type { Actions } from './actions.js';
import type { Store } from './store.js';
import type { JobStatus, StatusState } from './types.js';

const COLUMNS = ['Job', 'Scope', 'Schedule', 'State', 'Last run', 'Next due', 'Counters', 'Actions'] as const;

function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The overview's section and its upkeep. */
export class Overview {
  readonly el: HTMLElement;
  private readonly tbody = h('tbody');
  private readonly table = h('table', { class: 'jobs', id: 'jobs' }, h('caption', { class: 'sr-only' }, 'Every job of the cluster'), h('thead', null, h('tr', null, COLUMNS.map((c) => h('th', { scope: 'col' }, c)))), this.tbody);
  private readonly rows = new Map<string, HTMLTableRowElement>();
  private order: string[] = [];
  private readonly search = h('input', { id: 'job-search', type: 'search', placeholder: 'id, description, scope, schedule', autocomplete: 'off', spellcheck: 'false' });
  private readonly stateFilter = h('select', { id: 'state-filter' }, h('option', { value: '' }, 'every state'), STATES.map((s) => h('option', { value: s }, stateText(s))));
  private readonly scopeFilter = h('select', { id: 'scope-filter' }, h('option', { value: '' }, 'every scope'), h('option', { value: 'installation' }, 'installation'), h('option', { value: 'instance' }, 'instance'));
  private readonly summary = h('p', { class: 'summary', 'aria-live': 'polite' });
  private readonly empty = h('p', { class: 'muted', hidden: true }, 'No job matches.');
  private readonly instances = h('div', { class: 'table-wrap' });
  private readonly count = h('span', { class: 'muted' });
  private readonly executors: ExecutorsView;
  private readonly pager: Pager;
  private readonly scopeLabel = h('label', { for: 'scope-filter' }, 'Scope');
  private typing: number | undefined;

  constructor(
    private readonly store: Store,
    private readonly actions: Actions,
  ) {
    this.executors = new ExecutorsView(store);
    this.pager = new Pager(store, {
      query: () => ({ q: this.search.value.trim(), state: this.stateFilter.value }),
      changed: (ids, removed) => this.update(ids, removed, false, false),
      row: (id) => this.rows.get(id),
    });
    const filter = (): void => this.filterChanged();
    this.search.addEventListener('input', filter);
    this.stateFilter.addEventListener('change', filter);
    this.scopeFilter.addEventListener('change', filter);
    this.el = h(
      'div',
      { class: 'overview' },
      h(
        'section',
        { 'aria-labelledby': 'jobs-h' },
        h('h2', { id: 'jobs-h' }, 'Jobs ', this.count),
        this.summary,
        h(
          'form',
          { class: 'filters', role: 'search', onsubmit: (e: Event) => e.preventDefault() },
          h('label', { for: 'job-search' }, 'Search'),
          this.search,
          h('label', { for: 'state-filter' }, 'State'),
          this.stateFilter,
          this.scopeLabel,
          this.scopeFilter,
        ),
        h('div', { class: 'table-wrap' }, this.table),
        this.empty,
        this.pager.el,
      ),
      h('section', { 'aria-labelledby': 'instances-h' }, h('h2', { id: 'instances-h' }, 'Instances'), this.instances),
      this.executors.el,
    );
  }

  /** Shows only the jobs of one state (the summary's buttons). */
  showState(state: StatusState | ''): void {
    this.stateFilter.value = state;
    this.filterChanged();
  }

  /** A large installation is searched on the server, once typing pauses; a small one here. */
  private filterChanged(): void {
    if (!this.store.paged) return this.filterAll();
    window.clearTimeout(this.typing);
    this.typing = window.setTimeout(() => void this.pager.reset(), 250);
  }

  /** Builds every row from the store; a large installation's from its first page. */
  renderAll(): void {
    // The scope is not a filter of the server's pages.
    this.scopeLabel.hidden = this.scopeFilter.hidden = this.store.paged !== null;
    this.table.classList.toggle('paged', this.store.paged !== null);
    if (this.store.paged && !this.pager.started) void this.pager.reset();
    else if (!this.store.paged && this.pager.started) this.pager.stop();
    this.rows.clear();
    this.order = [...this.store.jobs.keys()].sort(byId);
    const frag = document.createDocumentFragment();
    for (const id of this.order) {
      const job = this.store.jobs.get(id);
      if (!job) continue;
      const row = this.row(job);
      this.rows.set(id, row);
      frag.appendChild(row);
    }
    this.tbody.replaceChildren(frag);
    this.renderInstances();
    this.executors.render();
    this.filterAll();
  }

  /** Replaces the rows of the jobs that changed, adds new ones in order, drops the removed. */
  update(ids: readonly string[], removed: readonly string[], instances: boolean, executors: boolean): void {
    for (const id of removed) {
      this.rows.get(id)?.remove();
      this.rows.delete(id);
    }
    if (removed.length > 0) this.order = this.order.filter((id) => this.rows.has(id));
    for (const id of ids) {
      const job = this.store.jobs.get(id);
      if (!job) continue;
      const row = this.row(job);
      this.applyFilter(row, job);
      const old = this.rows.get(id);
      if (old) {
        // Keep the focus on a button that is being replaced.
        const focused = old.contains(document.activeElement) ? (document.activeElement as HTMLElement | null)?.dataset['action'] : undefined;
        old.replaceWith(row);
        if (focused) row.querySelector<HTMLElement>(focused === 'pause' || focused === 'resume' ? '[data-action="pause"], [data-action="resume"]' : `[data-action="${focused}"]`)?.focus();
      } else {
        const end = this.order.at(-1);
        let i = end === undefined || end < id ? this.order.length : this.order.findIndex((other) => other > id);
        if (i < 0) i = this.order.length;
        this.order.splice(i, 0, id);
        const next = this.order[i + 1];
        this.tbody.insertBefore(row, next === undefined ? null : (this.rows.get(next) ?? null));
      }
      this.rows.set(id, row);
    }
    if (instances) this.renderInstances();
    if (executors) this.executors.render();
    this.renderSummary();
  }

  /** The admin buttons follow whether admin is enabled. */
  refreshActions(): void {
    for (const [id, row] of this.rows) {
      const cell = row.querySelector('td.actions');
      const job = this.store.jobs.get(id);
      if (cell && job) fill(cell, this.buttons(job));
    }
  }

  private buttons(job: JobStatus): HTMLElement[] {
    return [this.actions.button(job.id, 'run'), this.actions.button(job.id, job.state === 'paused' ? 'resume' : 'pause'), this.actions.button(job.id, 'cancel')];
  }

  private row(job: JobStatus): HTMLTableRowElement {
    const now = this.store.now();
    const alarm = job.state === 'degraded' || job.state === 'invalidSchedule';
    return h(
      'tr',
      { 'data-job-id': job.id, 'data-state': job.state, class: alarm ? 'alarm' : null },
      h('td', { 'data-label': 'Job', class: 'job' }, h('a', { href: jobHref(job.id), class: 'job-id' }, job.id), job.description ? h('span', { class: 'description', 'data-field': 'description' }, job.description) : null),
      h('td', { 'data-label': 'Scope' }, job.scope ?? '—'),
      h('td', { 'data-label': 'Schedule' }, scheduleEl(job.schedule)),
      h(
        'td',
        { 'data-label': 'State' },
        stateBadge(job.state),
        job.degradedReasons.length > 0 ? h('ul', { class: 'reasons' }, job.degradedReasons.map((r) => h('li', null, r))) : null,
        job.lease ? this.lease(job) : null,
      ),
      h(
        'td',
        { 'data-label': 'Last run', class: 'last' },
        outcomeBadge(job.lastOutcome),
        job.lastStartedAt ? h('span', { class: 'when' }, agoEl(job.lastStartedAt, now), job.lastDurationMs !== null ? ` · ${duration(job.lastDurationMs)}` : '') : null,
        job.lastError ? h('span', { class: 'error', 'data-field': 'lastError', title: job.lastError }, job.lastError) : null,
      ),
      h('td', { 'data-label': 'Next due' }, job.state === 'paused' ? h('span', { class: 'muted' }, 'paused') : dueEl(job.nextDueAt, now)),
      h('td', { 'data-label': 'Counters' }, countersLine(job)),
      h('td', { 'data-label': 'Actions', class: 'actions' }, this.buttons(job)),
    );
  }

  /** Who holds the lease, and for how long still. */
  private lease(job: JobStatus): HTMLElement {
    const end = this.store.leaseEnds.get(job.id);
    return h(
      'span',
      { class: 'lease', 'data-field': 'lease' },
      'lease: ',
      h('strong', null, job.lease?.holder ?? ''),
      end === undefined ? null : [' · ', h('span', { 'data-until': new Date(end).toISOString(), title: 'time left on the lease' }, duration(Math.max(0, end - this.store.now()))), ' left'],
    );
  }

  /** For the clock's tick of a large installation: whether an element sits in a job's row off screen. */
  offScreen(): (el: HTMLElement) => boolean {
    return offScreen(this.pager.shownRange());
  }

  private matches(job: JobStatus): boolean {
    if (this.store.paged) return true; // the server searched
    const state = this.stateFilter.value;
    const scope = this.scopeFilter.value;
    if (state && job.state !== state) return false;
    if (scope && job.scope !== scope) return false;
    const q = this.search.value.trim().toLowerCase();
    if (!q) return true;
    return [job.id, job.description ?? '', job.scope ?? '', job.schedule.expression ?? '', job.schedule.zone ?? ''].some((t) => t.toLowerCase().includes(q));
  }

  private applyFilter(row: HTMLTableRowElement, job: JobStatus): void {
    const show = this.matches(job);
    if (row.hidden === show) row.hidden = !show;
  }

  private filterAll(): void {
    let shown = 0;
    for (const [id, row] of this.rows) {
      const job = this.store.jobs.get(id);
      if (!job) continue;
      this.applyFilter(row, job);
      if (!row.hidden) shown++;
    }
    this.empty.hidden = shown > 0 || this.rows.size === 0;
    this.renderSummary(shown);
  }

  private renderSummary(shown?: number): void {
    const by = new Map<StatusState, number>();
    const paged = this.store.paged;
    if (paged) for (const [state, n] of Object.entries(paged.states)) by.set(state as StatusState, n);
    else for (const j of this.store.jobs.values()) by.set(j.state, (by.get(j.state) ?? 0) + 1);
    const all = paged?.total ?? this.store.jobs.size;
    const visible = paged ? (this.pager.started ? this.pager.total : all) : (shown ?? [...this.rows.values()].filter((r) => !r.hidden).length);
    this.count.textContent = visible === all ? `(${all})` : `(${visible} of ${all})`;
    fill(
      this.summary,
      all === 0 ? 'No job is registered in Redis yet.' : null,
      STATES.filter((s) => (by.get(s) ?? 0) > 0).map((s) =>
        h('button', { type: 'button', class: `chip state-${s}`, 'aria-pressed': this.stateFilter.value === s ? 'true' : 'false', onclick: () => this.showState(this.stateFilter.value === s ? '' : s) }, `${by.get(s) ?? 0} ${stateText(s)}`),
      ),
    );
  }

  private renderInstances(): void {
    const now = this.store.now();
    const list = [...this.store.instances].sort((a, b) => byId(a.id, b.id));
    if (list.length === 0) {
      fill(this.instances, h('p', { class: 'muted' }, 'No live instance.'));
      return;
    }
    fill(
      this.instances,
      h(
        'table',
        { class: 'instances' },
        h('caption', { class: 'sr-only' }, 'The live instances'),
        h('thead', null, h('tr', null, ['Instance', 'Live', 'Host', 'PID', 'Version', 'Started', 'Last seen', 'Jobs'].map((c) => h('th', { scope: 'col' }, c)))),
        h(
          'tbody',
          null,
          list.map((i) =>
            h(
              'tr',
              { 'data-instance-id': i.id },
              h('td', { 'data-label': 'Instance' }, i.id),
              h('td', { 'data-label': 'Live' }, h('span', { class: 'badge state-ok' }, 'live')),
              h('td', { 'data-label': 'Host' }, i.host ?? '—'),
              h('td', { 'data-label': 'PID' }, i.pid === null ? '—' : String(i.pid)),
              h('td', { 'data-label': 'Version' }, i.version ?? '—'),
              h('td', { 'data-label': 'Started', title: timeText(i.startedAt) }, agoEl(i.startedAt, now)),
              h('td', { 'data-label': 'Last seen' }, agoEl(i.lastSeenAt, now)),
              h('td', { 'data-label': 'Jobs' }, i.jobs === null ? '—' : String(i.jobs)),
            ),
          ),
        ),
      ),
    );
  }
}
