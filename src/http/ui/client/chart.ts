/**
 * A bar chart of a job's recent run durations, oldest on the left, each bar coloured by the
 * run's outcome and titled with its details. Plain SVG built element by element.
 * @module
 */
import { svg, h } from './dom.js';
import { duration } from './format.js';
import type { RecentRun } from './types.js';

const W = 600;
const H = 160;
const PAD_TOP = 18;
const PAD_BOTTOM = 4;

/** The chart of `runs` (newest first, as the status gives them). */
export function durationChart(runs: readonly RecentRun[], time: (iso: string) => string): Element {
  if (runs.length === 0) return h('p', { class: 'muted' }, 'No run yet.');
  const chrono = [...runs].reverse();
  const max = Math.max(1, ...chrono.map((r) => r.durationMs));
  // At least 20 slots, newest on the right, so a few runs do not make wide bars.
  const slots = Math.max(chrono.length, 20);
  const slot = W / slots;
  const first = slots - chrono.length;
  const bar = Math.max(1, slot * 0.8);
  const label = `Durations of the last ${chrono.length} runs: from ${duration(Math.min(...chrono.map((r) => r.durationMs)))} to ${duration(max)}`;
  const chart = svg(
    'svg',
    { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': label, preserveAspectRatio: 'none' },
    svg('line', { x1: 0, y1: H - PAD_BOTTOM, x2: W, y2: H - PAD_BOTTOM, class: 'axis' }),
    chrono.map((r, i) => {
      const height = Math.max(1, ((H - PAD_TOP - PAD_BOTTOM) * r.durationMs) / max);
      return svg(
        'rect',
        { x: ((first + i) * slot + (slot - bar) / 2).toFixed(2), y: (H - PAD_BOTTOM - height).toFixed(2), width: bar.toFixed(2), height: height.toFixed(2), class: `bar outcome-${r.outcome}` },
        svg('title', null, `${r.outcome} · ${duration(r.durationMs)} · ${time(r.startedAt)} · ${r.instance}`),
      );
    }),
  );
  return h('figure', { class: 'chart-box' }, h('div', { class: 'chart-max', 'aria-hidden': 'true' }, `max ${duration(max)}`), chart, h('figcaption', { class: 'muted' }, label, ' (newest on the right).'));
}
