/**
 * Reading the fields of a stats hash: Redis keeps text, the status has numbers, times,
 * outcomes or null.
 * @module
 */
import { RunOutcomes, type RunOutcome } from '../runner/events.js';

/** A text field; null when absent or empty. */
export function text(v: string | undefined): string | null {
  return v === undefined || v === '' ? null : v;
}

/**
 * An outcome field; null when absent, empty, or an outcome this version does not know (one a
 * node of a newer version recorded): the status never shows a value its type does not allow.
 */
export function outcome(v: unknown): RunOutcome | null {
  return typeof v === 'string' && Object.hasOwn(RunOutcomes, v) ? (v as RunOutcome) : null;
}

/** A number field; null when absent, empty or not a number. */
export function num(v: string | undefined): number | null {
  if (v === undefined || v === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** A counter: 0 when absent. */
export function count(v: string | undefined): number {
  return num(v) ?? 0;
}

/** An ISO-8601 time field as epoch ms; null when absent or not a time. */
export function time(v: string | undefined): number | null {
  if (!v) return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t;
}

/** Epoch ms as ISO-8601 text; null when there is none or a Date cannot hold it. */
export function isoOrNull(ms: number | null): string | null {
  return ms === null || !Number.isFinite(ms) || Math.abs(ms) > 8.64e15 ? null : new Date(ms).toISOString();
}

/** A duration for people: `1.5h`, `3.0m`, `12.0s`. */
export function duration(ms: number): string {
  if (ms >= 3_600_000) return `${(ms / 3_600_000).toFixed(1)}h`;
  if (ms >= 60_000) return `${(ms / 60_000).toFixed(1)}m`;
  return `${(ms / 1000).toFixed(1)}s`;
}

