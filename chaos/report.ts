/**
 * What a fault scenario reports, and the table `npm run chaos` prints.
 * @module
 */

/** One property a scenario checked. */
export interface Check {
  /** What was checked, for people. */
  readonly what: string;
  readonly ok: boolean;
  /** The figures behind the verdict. */
  readonly detail: string;
}

/** The figures of one scenario run. */
export interface Figures {
  /** Runs (installation ticks, or instance runs) the system promised in the scenario's windows. */
  readonly expected: number;
  /** Of those, the runs that happened (from the run log). */
  readonly done: number;
  /** Ticks of an installation job that started more than once. */
  readonly duplicated: number;
  /** Runs in the run log that Redis's counters do not have (negative: counted twice). */
  readonly lostCounts: number;
  /** Ticks Redis counted as `missed` (ran on no node). */
  readonly missed: number;
  readonly checks: readonly Check[];
}

/** A scenario's result row. */
export interface ScenarioResult extends Figures {
  readonly name: string;
  readonly faults: string;
  readonly passed: boolean;
  readonly seconds: number;
  /** Set when the scenario itself broke (a node did not start, ...). */
  readonly error?: string;
}

/** Collects checks as a scenario goes. */
export class Checks {
  readonly list: Check[] = [];

  /** Records a check; returns `ok` so a scenario can branch on it. */
  add(what: string, ok: boolean, detail: string): boolean {
    this.list.push({ what, ok, detail });
    return ok;
  }

  /** Records `actual === expected`. */
  equal(what: string, actual: number, expected: number, detail = ''): boolean {
    return this.add(what, actual === expected, `${actual} (expected ${expected})${detail ? `; ${detail}` : ''}`);
  }

  /** Records `actual <= bound`. */
  atMost(what: string, actual: number, bound: number, unit = ''): boolean {
    return this.add(what, actual <= bound, `${actual}${unit} (at most ${bound}${unit})`);
  }

  /** Records `actual >= bound`. */
  atLeast(what: string, actual: number, bound: number, unit = ''): boolean {
    return this.add(what, actual >= bound, `${actual}${unit} (at least ${bound}${unit})`);
  }
}

const COLUMNS = ['scenario', 'faults injected', 'runs expected', 'runs done', 'duplicated', 'lost counts', 'missed', 'result'] as const;

function row(r: ScenarioResult): string[] {
  const result = r.error !== undefined ? 'ERROR' : r.passed ? 'pass' : 'FAIL';
  return [r.name, r.faults, String(r.expected), String(r.done), String(r.duplicated), String(r.lostCounts), String(r.missed), result];
}

/** The results as a Markdown table (readable in a terminal and in the docs). */
export function table(results: readonly ScenarioResult[]): string {
  const rows = results.map(row);
  const widths = COLUMNS.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(COLUMNS), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

/** Every check of every scenario, failed ones marked, for the lines under the table. */
export function details(results: readonly ScenarioResult[]): string {
  const out: string[] = [];
  for (const r of results) {
    out.push(`${r.name} (${r.seconds.toFixed(1)} s)${r.error !== undefined ? `: ERROR ${r.error}` : ''}`);
    for (const c of r.checks) out.push(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.what}: ${c.detail}`);
  }
  return out.join('\n');
}
