/**
 * Pieces the overview and the job page share: state and outcome badges, times that tick
 * (countdowns and "… ago", refreshed every second by {@link tick}), counters.
 * @module
 */
import { h } from './dom.js';
import { ago, countdown, duration, scheduleWords } from './format.js';
import type { JobStatus, ScheduleStatus, StatusState } from './types.js';

const STATE_TEXT: Readonly<Record<StatusState, string>> = {
  ok: 'ok',
  degraded: 'degraded',
  invalidSchedule: 'invalid schedule',
  paused: 'paused',
  orphaned: 'orphaned',
};

/** The states, in the order the filter lists them. */
export const STATES: readonly StatusState[] = ['ok', 'degraded', 'invalidSchedule', 'paused', 'orphaned'];

/** A state's words. */
export function stateText(state: StatusState): string {
  return STATE_TEXT[state] ?? state;
}

/** A job's state as a badge; degraded and invalid schedules stand out. */
export function stateBadge(state: StatusState): HTMLElement {
  const alarm = state === 'degraded' || state === 'invalidSchedule';
  return h('span', { class: `badge state-${state}`, 'data-field': 'state' }, alarm ? '⚠ ' : '', stateText(state));
}

/** A run's outcome as a badge. */
export function outcomeBadge(outcome: string | null): HTMLElement {
  return outcome === null ? h('span', { class: 'muted' }, 'no run yet') : h('span', { class: `badge outcome-${outcome}` }, outcome);
}

const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** An ISO time for people, in this browser's zone. */
export function timeText(iso: string | null): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  return Number.isFinite(t) ? absolute.format(t) : iso;
}

/** "3 s ago", kept fresh, with the exact time as its title. */
export function agoEl(iso: string | null, now: number): HTMLElement {
  if (!iso) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: iso, 'data-ago': iso, title: timeText(iso) }, ago(Date.parse(iso), now));
}

/** A countdown to an ISO time, kept fresh, with the exact time as its title. */
export function dueEl(iso: string | null, now: number): HTMLElement {
  if (!iso) return h('span', { class: 'muted' }, 'not planned');
  return h('time', { datetime: iso, 'data-due': iso, title: timeText(iso) }, countdown(Date.parse(iso), now));
}

/** Refreshes every ticking time under `root`. */
export function tick(root: ParentNode, now: number, skip?: (el: HTMLElement) => boolean): void {
  for (const el of root.querySelectorAll<HTMLElement>('[data-due]')) {
    if (skip?.(el)) continue;
    const text = countdown(Date.parse(el.dataset['due'] ?? ''), now);
    if (el.textContent !== text) el.textContent = text;
  }
  for (const el of root.querySelectorAll<HTMLElement>('[data-ago]')) {
    if (skip?.(el)) continue;
    const text = ago(Date.parse(el.dataset['ago'] ?? ''), now);
    if (el.textContent !== text) el.textContent = text;
  }
  for (const el of root.querySelectorAll<HTMLElement>('[data-until]')) {
    const left = Date.parse(el.dataset['until'] ?? '') - now;
    const text = left > 0 ? duration(Math.ceil(left / 1_000) * 1_000) : 'expired';
    if (el.textContent !== text) el.textContent = text;
  }
}

/** A schedule in words and as written. */
export function scheduleEl(schedule: ScheduleStatus): HTMLElement {
  const words = scheduleWords(schedule);
  const kind = schedule.kind === 'cron' ? '' : schedule.kind === 'fixedRate' ? 'fixedRate ' : schedule.kind === 'fixedDelay' ? 'fixedDelay ' : '';
  return h(
    'span',
    { class: 'schedule' },
    words !== null ? h('span', { class: 'words' }, words) : null,
    schedule.expression !== null ? h('code', null, kind, schedule.expression) : h('span', { class: 'muted' }, 'unknown schedule'),
  );
}

/** The counters by name, in the order they are shown. */
export const COUNTERS: ReadonlyArray<readonly [keyof JobStatus, string]> = [
  ['runs', 'runs'],
  ['succeeded', 'succeeded'],
  ['failed', 'failed'],
  ['timedOut', 'timed out'],
  ['lockLost', 'lock lost'],
  ['lost', 'lost'],
  ['interrupted', 'interrupted'],
  ['overruns', 'overruns'],
  ['skipped', 'skipped'],
  ['skippedClaimed', 'claimed elsewhere'],
  ['skippedPaused', 'skipped paused'],
  ['missed', 'missed'],
];

const BAD_COUNTERS: ReadonlySet<string> = new Set(['failed', 'timedOut', 'lockLost', 'lost', 'missed']);

/** A job's counters, each named. */
export function countersEl(job: JobStatus): HTMLElement {
  return h(
    'dl',
    { class: 'counters' },
    COUNTERS.map(([k, label]) => h('div', { class: Number(job[k]) > 0 && BAD_COUNTERS.has(k) ? 'bad' : null }, h('dt', null, label), h('dd', null, String(job[k])))),
  );
}

/**
 * A job's counters in one line of text (a row of the overview, where a thousand rows must stay
 * light): runs, succeeded and failed always, the others when not zero.
 */
export function countersLine(job: JobStatus): HTMLElement {
  const shown = COUNTERS.filter(([k]) => k === 'runs' || k === 'succeeded' || k === 'failed' || (k !== 'skippedClaimed' && k !== 'skippedPaused' && Number(job[k]) > 0));
  const bad = shown.some(([k]) => BAD_COUNTERS.has(k) && Number(job[k]) > 0);
  return h('span', { class: bad ? 'counters-line bad' : 'counters-line' }, shown.map(([k, label]) => `${label} ${String(job[k])}`).join(' · '));
}

/** A job page's address. */
export function jobHref(id: string): string {
  return `#/jobs/${encodeURIComponent(id)}`;
}
