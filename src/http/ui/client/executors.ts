/**
 * The executors of background tasks on the overview: each one's kind, concurrency, tasks
 * running, queue depth and outcome counts; a row per node for a `loop` or `worker` executor
 * and one for a `queue` executor (`data-executor="<name>"`). A queue depth that keeps growing
 * stands out, in words as well as in colour.
 * @module
 */
import { h, fill } from './dom.js';
import type { Store } from './store.js';
import type { ExecutorRow } from './types.js';

const COLUMNS = ['Executor', 'Kind', 'Node', 'Concurrency', 'Active', 'Queued', 'Succeeded', 'Failed', 'Timed out', 'Cancelled', 'Interrupted'] as const;

/** Counts that are bad news when not zero. */
const BAD: ReadonlyArray<keyof ExecutorRow> = ['failed', 'timedOut', 'interrupted'];

function used(e: ExecutorRow): boolean {
  return e.active + e.queued + e.succeeded + e.failed + e.timedOut + e.cancelled + e.interrupted > 0;
}

function count(e: ExecutorRow, field: keyof ExecutorRow, label: string): HTMLElement {
  const value = Number(e[field]);
  return h('td', { 'data-label': label, 'data-field': field, class: BAD.includes(field) && value > 0 ? 'num bad' : 'num' }, String(value));
}

/** The executors' section; {@link render} rebuilds its table from the store. */
export class ExecutorsView {
  readonly el: HTMLElement;
  private readonly body = h('div', { class: 'table-wrap' });
  private readonly count = h('span', { class: 'muted' });

  constructor(private readonly store: Store) {
    this.el = h(
      'section',
      { 'aria-labelledby': 'executors-h', id: 'executors' },
      h('h2', { id: 'executors-h' }, 'Executors ', this.count),
      h('p', { class: 'muted section-note' }, 'Background tasks: a row per node for loop and worker executors, one row for a queue executor (its figures are the whole cluster’s). Queued is the queue depth.'),
      this.body,
    );
  }

  render(): void {
    const rows = [...this.store.executors].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : (a.instanceId ?? '') < (b.instanceId ?? '') ? -1 : 1));
    const names = new Set(rows.map((r) => r.name));
    this.count.textContent = names.size > 0 ? `(${names.size})` : '';
    if (rows.length === 0) {
      fill(this.body, h('p', { class: 'empty-note', 'data-empty': 'executors' }, 'No executor has been used yet. The executors of background tasks show here, with their queue depth, once configured or given a task.'));
      return;
    }
    const growing = rows.filter((e) => this.store.growing(e));
    fill(
      this.body,
      rows.some(used) ? null : h('p', { class: 'empty-note', 'data-empty': 'tasks' }, 'No task has been submitted to these executors yet.'),
      growing.length > 0
        ? h('p', { class: 'growing-note', role: 'status' }, `Queue growing: ${[...new Set(growing.map((e) => e.name))].join(', ')}. Tasks arrive faster than they finish.`)
        : null,
      h(
        'table',
        { class: 'executors' },
        h('caption', { class: 'sr-only' }, 'The executors of background tasks'),
        h('thead', null, h('tr', null, COLUMNS.map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', null, rows.map((e) => this.row(e, this.store.growing(e)))),
      ),
    );
  }

  private row(e: ExecutorRow, growing: boolean): HTMLTableRowElement {
    return h(
      'tr',
      { 'data-executor': e.name, 'data-kind': e.kind, 'data-instance': e.instanceId ?? null, 'data-growing': growing ? 'true' : null, class: growing ? 'growing' : null },
      h('td', { 'data-label': 'Executor', class: 'executor-name' }, e.name),
      h('td', { 'data-label': 'Kind' }, e.kind),
      h('td', { 'data-label': 'Node' }, e.instanceId ?? h('span', { class: 'muted' }, 'whole cluster')),
      h('td', { 'data-label': 'Concurrency', class: 'num' }, String(e.concurrency), e.kind === 'queue' ? h('span', { class: 'muted' }, ' per node') : null),
      count(e, 'active', 'Active'),
      h(
        'td',
        { 'data-label': 'Queued', 'data-field': 'queued', class: 'num queued' },
        h('span', { class: 'depth' }, String(e.queued)),
        growing ? h('span', { class: 'badge growing-badge' }, '▲ growing') : null,
      ),
      count(e, 'succeeded', 'Succeeded'),
      count(e, 'failed', 'Failed'),
      count(e, 'timedOut', 'Timed out'),
      count(e, 'cancelled', 'Cancelled'),
      count(e, 'interrupted', 'Interrupted'),
    );
  }
}
