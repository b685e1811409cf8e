/**
 * A job's page: its state and reasons, schedule, last run, counters, lease holder with the
 * time left, settings overrides, per-instance rows, a chart of recent durations and the
 * recent runs. The job's status comes live from the store; its recent runs from
 * `GET /manage/jobs/:id`, read again when the job changes.
 * @module
 */
import { h, fill } from './dom.js';
import { durationChart } from './chart.js';
import { duration } from './format.js';
import { agoEl, countersEl, dueEl, outcomeBadge, scheduleEl, stateBadge, timeText } from './parts.js';
import type { Actions } from './actions.js';
import { api, type Store } from './store.js';
import type { JobDetail, JobStatus, RecentRun } from './types.js';

function fact(label: string, ...value: Array<Node | string | null>): HTMLElement {
  return h('div', null, h('dt', null, label), h('dd', null, ...value));
}

/** One job's page; make a new one for each job shown. */
export class JobPage {
  readonly el = h('div', { class: 'job-page' });
  private runs: RecentRun[] | null = null;
  private runsError: string | null = null;
  private missing = false;
  private reading: Promise<void> | undefined;
  private again = false;

  constructor(
    readonly id: string,
    private readonly store: Store,
    private readonly actions: Actions,
  ) {}

  /** Reads the recent runs (again), one read at a time. */
  load(): void {
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = this.read().finally(() => {
      this.reading = undefined;
      if (this.again) {
        this.again = false;
        this.load();
      }
    });
  }

  private async read(): Promise<void> {
    try {
      const res = await fetch(api(`jobs/${encodeURIComponent(this.id)}`), { cache: 'no-store' });
      if (res.status === 404) {
        this.missing = true;
      } else if (res.ok) {
        const detail = (await res.json()) as JobDetail;
        this.missing = false;
        this.runs = detail.recentRuns;
        this.runsError = null;
        // A large installation's stream sends no job: its page is kept live by this read.
        if (!this.store.jobs.has(this.id) || this.store.paged) this.store.put(detail, this.store.now());
      } else {
        const body = (await res.json().catch(() => ({}))) as { message?: string };
        this.runsError = body.message ?? `${res.status} ${res.statusText}`;
      }
    } catch (err) {
      this.runsError = err instanceof Error ? err.message : String(err);
    }
    this.render();
  }

  /** Draws the page from the store and the last read runs. */
  render(): void {
    const job = this.store.jobs.get(this.id);
    const back = h('p', null, h('a', { href: '#/' }, '← All jobs'));
    if (!job) {
      fill(this.el, back, h('h2', { tabindex: '-1', class: 'page-title' }, this.id), h('p', null, this.missing ? 'There is no such job in Redis.' : 'Loading…'));
      return;
    }
    const now = this.store.now();
    const alarm = job.state === 'degraded' || job.state === 'invalidSchedule';
    const refocus = this.focused();
    fill(
      this.el,
      back,
      h('div', { class: 'job-head', 'data-job-id': job.id, 'data-state': job.state }, h('h2', { tabindex: '-1', class: 'page-title' }, job.id), stateBadge(job.state), h('div', { class: 'actions' }, this.actions.button(job.id, 'run'), this.actions.button(job.id, job.state === 'paused' ? 'resume' : 'pause'), this.actions.button(job.id, 'cancel'))),
      job.description ? h('p', { class: 'description', 'data-field': 'description' }, job.description) : null,
      job.degradedReasons.length > 0 ? h('div', { class: alarm ? 'reasons-box alarm' : 'reasons-box' }, h('h3', null, 'Why it is ', job.state === 'invalidSchedule' ? 'invalid' : 'degraded'), h('ul', { class: 'reasons' }, job.degradedReasons.map((r) => h('li', null, r)))) : null,
      h(
        'dl',
        { class: 'facts' },
        fact('Scope', job.scope ?? '—'),
        fact('Schedule', scheduleEl(job.schedule)),
        fact('Next due', job.state === 'paused' ? 'paused' : dueEl(job.nextDueAt, now)),
        fact('Last outcome', outcomeBadge(job.lastOutcome)),
        fact('Last start', agoEl(job.lastStartedAt, now), job.lastStartedAt ? ` (${timeText(job.lastStartedAt)})` : null),
        fact('Last duration', job.lastDurationMs === null ? '—' : duration(job.lastDurationMs)),
        fact('Last node', job.lastInstance ?? '—'),
        fact('Last success', agoEl(job.lastSuccessAt, now)),
        fact('Success due by', job.successDueBy ? timeText(job.successDueBy) : '—'),
        fact('Failing streak', String(job.streak)),
        fact('Registered', job.createdAt ? timeText(job.createdAt) : '—'),
        fact('Last registered by a node', agoEl(job.lastRegisteredAt, now)),
      ),
      job.lastError ? h('div', null, h('h3', null, 'Last error'), h('pre', { class: 'error-text', 'data-field': 'lastError' }, job.lastError)) : null,
      h('section', { 'aria-labelledby': 'counters-h' }, h('h3', { id: 'counters-h' }, 'Counters'), countersEl(job)),
      job.scope === 'installation' ? this.lease(job, now) : null,
      job.scope === 'instance' ? this.instances(job, now) : null,
      this.settings(job),
      h('section', { 'aria-labelledby': 'durations-h' }, h('h3', { id: 'durations-h' }, 'Recent durations'), this.runs === null ? h('p', { class: 'muted' }, this.runsError ?? 'Loading…') : durationChart(this.runs, timeText)),
      h('section', { 'aria-labelledby': 'runs-h' }, h('h3', { id: 'runs-h' }, 'Recent runs'), this.runsTable()),
    );
    if (refocus) this.el.querySelector<HTMLElement>(refocus)?.focus();
  }

  /** What has the focus in the page, to give it back after drawing it again: its selector. */
  private focused(): string | undefined {
    const el = document.activeElement;
    if (!(el instanceof HTMLElement) || !this.el.contains(el)) return undefined;
    const action = el.dataset['action'];
    // Pause becomes resume and back: the focus stays on the button in its place.
    if (action === 'pause' || action === 'resume') return '[data-action="pause"], [data-action="resume"]';
    if (action) return `[data-action="${action}"]`;
    if (el.classList.contains('page-title')) return '.page-title';
    if (el.matches('a[href="#/"]')) return 'a[href="#/"]';
    return undefined;
  }

  private lease(job: JobStatus, now: number): HTMLElement {
    const l = job.lease;
    if (!l) return h('section', { 'aria-labelledby': 'lease-h' }, h('h3', { id: 'lease-h' }, 'Lease'), h('p', { class: 'muted' }, 'Nobody holds the lease now.'));
    const end = this.store.leaseEnds.get(job.id);
    const until = end === undefined ? null : new Date(end).toISOString();
    return h(
      'section',
      { 'aria-labelledby': 'lease-h' },
      h('h3', { id: 'lease-h' }, 'Lease'),
      h(
        'dl',
        { class: 'facts' },
        fact('Holder', h('strong', { 'data-field': 'leaseHolder' }, l.holder)),
        fact('Since', l.since ? timeText(l.since) : '—'),
        fact('Time left', until && end !== undefined ? h('span', { 'data-until': until }, duration(Math.max(0, end - now))) : 'no expiry'),
        fact('Fencing token', l.fencingToken === null ? '—' : String(l.fencingToken)),
      ),
    );
  }

  private instances(job: JobStatus, now: number): HTMLElement {
    return h(
      'section',
      { 'aria-labelledby': 'job-instances-h' },
      h('h3', { id: 'job-instances-h' }, 'Per instance'),
      job.instances.length === 0
        ? h('p', { class: 'muted' }, 'No instance has run or scheduled it yet.')
        : h(
            'div',
            { class: 'table-wrap' },
            h(
              'table',
              null,
              h('thead', null, h('tr', null, ['Instance', 'Live', 'Runs', 'Succeeded', 'Failed', 'Timed out', 'Skipped', 'Last outcome', 'Last start', 'Duration', 'Next due', 'Last error'].map((c) => h('th', { scope: 'col' }, c)))),
              h(
                'tbody',
                null,
                job.instances.map((r) =>
                  h(
                    'tr',
                    { 'data-instance-id': r.instanceId },
                    h('td', { 'data-label': 'Instance' }, r.instanceId),
                    h('td', { 'data-label': 'Live' }, r.live ? h('span', { class: 'badge state-ok' }, 'live') : h('span', { class: 'badge state-orphaned' }, 'gone')),
                    h('td', { 'data-label': 'Runs' }, String(r.runs)),
                    h('td', { 'data-label': 'Succeeded' }, String(r.succeeded)),
                    h('td', { 'data-label': 'Failed' }, String(r.failed)),
                    h('td', { 'data-label': 'Timed out' }, String(r.timedOut)),
                    h('td', { 'data-label': 'Skipped' }, String(r.skipped)),
                    h('td', { 'data-label': 'Last outcome' }, outcomeBadge(r.lastOutcome)),
                    h('td', { 'data-label': 'Last start' }, agoEl(r.lastStartedAt, now)),
                    h('td', { 'data-label': 'Duration' }, r.lastDurationMs === null ? '—' : duration(r.lastDurationMs)),
                    h('td', { 'data-label': 'Next due' }, r.live ? dueEl(r.nextDueAt, now) : '—'),
                    h('td', { 'data-label': 'Last error', class: 'error' }, r.lastError ?? ''),
                  ),
                ),
              ),
            ),
          ),
    );
  }

  private settings(job: JobStatus): HTMLElement {
    const entries = Object.entries(job.settings);
    return h(
      'section',
      { 'aria-labelledby': 'settings-h' },
      h('h3', { id: 'settings-h' }, 'Settings overrides'),
      entries.length === 0
        ? h('p', { class: 'muted' }, 'None: the job runs as its code defines it.')
        : h('table', { class: 'settings' }, h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Field'), h('th', { scope: 'col' }, 'Value'))), h('tbody', null, entries.map(([k, v]) => h('tr', null, h('td', null, h('code', null, `${job.id}.${k}`)), h('td', null, h('code', null, v)))))),
    );
  }

  private runsTable(): HTMLElement {
    if (this.runs === null) return h('p', { class: 'muted' }, this.runsError ?? 'Loading…');
    if (this.runs.length === 0) return h('p', { class: 'muted' }, 'No run yet.');
    return h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'runs' },
        h('thead', null, h('tr', null, ['Outcome', 'Node', 'Tick', 'Start', 'Duration', 'Error', 'Fencing token', 'Manual', 'Attempt'].map((c) => h('th', { scope: 'col' }, c)))),
        h(
          'tbody',
          null,
          this.runs.map((r) =>
            h(
              'tr',
              null,
              h('td', { 'data-label': 'Outcome' }, outcomeBadge(r.outcome)),
              h('td', { 'data-label': 'Node' }, r.instance),
              h('td', { 'data-label': 'Tick' }, timeText(r.scheduledAt)),
              h('td', { 'data-label': 'Start' }, timeText(r.startedAt)),
              h('td', { 'data-label': 'Duration' }, duration(r.durationMs)),
              h('td', { 'data-label': 'Error', class: 'error' }, r.error ?? ''),
              h('td', { 'data-label': 'Fencing token' }, r.fencingToken === null ? '—' : String(r.fencingToken)),
              h('td', { 'data-label': 'Manual' }, r.manual ? 'yes' : 'no'),
              h('td', { 'data-label': 'Attempt' }, String(r.attempt)),
            ),
          ),
        ),
      ),
    );
  }
}
