/**
 * Reads the run log the cluster fixtures write, and checks it.
 */
import { readFileSync, existsSync } from 'node:fs';

/** One line of a fixture's run log. */
export interface RunLine {
  ev: 'start' | 'end' | 'abort';
  job: string;
  tick: number;
  inst: string;
  token: number | undefined;
  t: number;
  reason?: string;
}

/**
 * The complete lines of a JSON-lines file that processes may still be appending to: a line is
 * complete once its newline is written, so the text after the last newline (a line being
 * appended, which a read can see in part) is left for the next read. None when it does not exist.
 */
export function readJsonLines<T>(path: string): T[] {
  if (!existsSync(path)) return [];
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.pop();
  return lines.filter((l) => l.trim()).map((l) => JSON.parse(l) as T);
}

/** All complete lines of the run log at `path`. */
export function readRuns(path: string): RunLine[] {
  return readJsonLines<RunLine>(path);
}

/** Ticks started more than once for `job`. */
export function duplicateTicks(lines: RunLine[], job: string): number[] {
  const seen = new Map<number, number>();
  for (const l of lines) if (l.job === job && l.ev === 'start') seen.set(l.tick, (seen.get(l.tick) ?? 0) + 1);
  return [...seen].filter(([, n]) => n > 1).map(([t]) => t);
}

/** Pairs of runs of `job` that overlapped in real time. */
export function overlaps(lines: RunLine[], job: string): Array<[RunLine, RunLine]> {
  const starts = lines.filter((l) => l.job === job && l.ev === 'start').sort((a, b) => a.t - b.t);
  const endOf = (s: RunLine) => lines.find((l) => l.job === job && l.ev !== 'start' && l.tick === s.tick && l.inst === s.inst)?.t ?? Infinity;
  const out: Array<[RunLine, RunLine]> = [];
  for (let i = 1; i < starts.length; i++) {
    const prev = starts[i - 1] as RunLine;
    const cur = starts[i] as RunLine;
    if (cur.t < endOf(prev)) out.push([prev, cur]);
  }
  return out;
}

/** Waits until `pred` holds for the log, polling. */
export async function waitForRuns(path: string, pred: (lines: RunLine[]) => boolean, ms = 15_000): Promise<RunLine[]> {
  const until = Date.now() + ms;
  for (;;) {
    const lines = readRuns(path);
    if (pred(lines)) return lines;
    if (Date.now() > until) throw new Error(`run log did not reach the expected state within ${ms} ms: ${lines.length} lines`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
