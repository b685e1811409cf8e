/**
 * The run log the chaos jobs write (see `jobs.ts`), read back and checked.
 * @module
 */
import { readJsonLines } from '../test/helpers/runs.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunEvent } from './jobs.js';

/** One line of the run log. */
export interface RunLine {
  readonly ev: RunEvent;
  readonly job: string;
  readonly tick: number;
  readonly inst: string;
  readonly token: number | undefined;
  readonly t: number;
  readonly reason?: string;
}

/** The file whose appearance makes the chaos job `thrower` throw on node `node` (see `jobs.ts`). */
export function throwTrigger(runLogPath: string, node: string): string {
  return `${runLogPath}.throw-${node}`;
}

/** Every complete line of the run log at `path` (none when it does not exist yet); see {@link readJsonLines}. */
export function readRunLog(path: string): RunLine[] {
  return readJsonLines<RunLine>(path);
}

/** Starts of `job`, oldest first. */
export function startsOf(lines: readonly RunLine[], job: string): RunLine[] {
  return lines.filter((l) => l.job === job && l.ev === 'start').sort((a, b) => a.t - b.t);
}

/** Ticks of `job` started more than once (on any node). */
export function duplicateTicks(lines: readonly RunLine[], job: string): number[] {
  const seen = new Map<number, number>();
  for (const l of startsOf(lines, job)) seen.set(l.tick, (seen.get(l.tick) ?? 0) + 1);
  return [...seen].filter(([, n]) => n > 1).map(([tick]) => tick);
}

/** The line that ended the run that `start` began (end or abort), if any. */
export function endOf(lines: readonly RunLine[], start: RunLine): RunLine | undefined {
  return lines.find((l) => l.job === start.job && l.inst === start.inst && l.tick === start.tick && (l.ev === 'end' || l.ev === 'abort'));
}

/** Runs that ended, by how: `end` or the abort reason (`lockLost`, `shutdown`, ...). */
export function finishedBy(lines: readonly RunLine[], job: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const l of lines) {
    if (l.job !== job || (l.ev !== 'end' && l.ev !== 'abort')) continue;
    const key = l.ev === 'end' ? 'end' : (l.reason ?? 'unknown');
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

/** Polls the log until `pred` holds; rejects after `ms`. */
export async function waitForLog(path: string, pred: (lines: RunLine[]) => boolean, ms: number, what: string): Promise<RunLine[]> {
  const until = Date.now() + ms;
  for (;;) {
    const lines = readRunLog(path);
    if (pred(lines)) return lines;
    if (Date.now() > until) throw new Error(`the run log did not show ${what} within ${ms} ms (${lines.length} lines)`);
    await sleep(50);
  }
}
