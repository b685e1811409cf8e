/**
 * The printed table: one row per scenario and system.
 * @module
 */
import type { BenchResults } from './harness.js';
import { scaleOutRows } from './scaleout.js';

function cell(v: number | string | undefined | null): string {
  if (v === undefined || v === null) return '-';
  return typeof v === 'number' ? String(Math.round(v * 100) / 100) : v;
}

/** Formats rows as aligned text columns. */
export function columns(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string => r.map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Windows of at most this many ticks get their lateness shown tick by tick. */
const MAX_TICKS_SHOWN = 12;

/** The results as text. */
export function formatTable(results: BenchResults): string {
  const timedHeader = ['scenario', 'system', 'runs', 'dup', 'miss', 'late p50', 'p99', 'max', 'p99 30 s on', 'redis cmd/run', 'sent/run', 'writes/run', 'redis cpu ms/run', 'cpu ms/run', 'rss MB'];
  const timed: string[][] = [];
  const crashes: string[][] = [];
  const byTick: string[][] = [];
  const status: string[][] = [];
  for (const s of results.scenarios) {
    for (const [system, f] of Object.entries(s.systems)) {
      if (f === undefined) continue;
      if ('error' in f) {
        timed.push([s.name, system, `error: ${f.error}`]);
        continue;
      }
      if ('runs' in f) {
        timed.push([s.name, system, cell(f.runs), cell(f.duplicates), cell(f.misses), cell(f.latenessMs.p50), cell(f.latenessMs.p99), cell(f.latenessMs.max), cell(f.steadyLatenessMs?.p99 ?? null), cell(f.redisCommandsPerRun), cell(f.redisRoundTripsPerRun), cell(f.redisBatchesPerRun), cell(f.redisCpuMsPerRun), cell(f.cpuMsPerRun), cell(f.rssMb)]);
        // Tick by tick where a window holds few ticks (S3): whether the late ones are a node's first.
        if (f.byTick && f.byTick.length <= MAX_TICKS_SHOWN) byTick.push([s.name, system, f.byTick.map((t) => `${t.p50}/${t.max}`).join('  ')]);
        if (f.crash) {
          const c = f.crash;
          crashes.push([s.name, system, cell(c.atMs), cell(c.inFlightAtKill), cell(f.misses), cell(c.missesBeyondLease), cell(c.lateTicks), cell(c.lateMs.p50), cell(c.lateMs.max), cell(c.inFlightRerun), cell(c.inFlightRerunLateMs.max), cell(c.afterKillMs.p50), cell(c.afterKillMs.max), cell(c.afterKillLate)]);
        }
      } else {
        const h = f.manageJobs;
        const hold = f.manageJobsHold;
        status.push([s.name, system, h ? cell(h.p50) : '-', h ? cell(h.p99) : '-', h ? cell(h.firstMs) : '-', h ? cell(h.requests) : '-', h ? cell(h.errors) : '-', cell(f.holdRssMb), cell(f.holdIdleCpuMsPerS ?? null), hold ? cell(hold.firstMs) : '-', hold && hold.requests > 0 ? cell(hold.p50) : '-', f.note ?? '']);
      }
    }
  }
  const parts = timed.length > 0 ? [columns(timedHeader, timed)] : [];
  if (crashes.length > 0) {
    parts.push(columns(['scenario', 'system', 'kill at ms', 'in flight', 'miss', 'miss beyond lease', 'late ticks', 'late p50', 'late max', 'in-flight re-run', 're-run late max', 'after kill p50', 'max', '>= 50 ms'], crashes));
  }
  if (byTick.length > 0) parts.push(columns(['scenario', 'system', 'late by tick of the window, p50/max ms'], byTick));
  if (status.length > 0) {
    parts.push(columns(['scenario', 'system', 'GET p50 ms', 'p99 ms', 'first ms', 'requests', 'errors', 'RSS MB (10k jobs)', 'idle CPU ms/s', '10k first ms', '10k p50 ms', 'note'], status));
  }
  const scale = scaleOutRows(results.scenarios);
  if (scale.length > 0) {
    parts.push(
      columns(
        ['scenario', 'system', 'nodes', 'runs', 'dup', 'miss', 'redis cmd/run', 'x smallest', 'redis cpu ms/run', 'x smallest', 'of it exec', 'node share min', 'max (x 1/N)', 'cpu ms/run', 'late p99'],
        scale.map((r) => ['S5', r.system, cell(r.nodes), cell(r.runs), cell(r.duplicates), cell(r.misses), cell(r.redisCommandsPerRun), cell(r.commandsVsSmallest), cell(r.redisCpuMsPerRun), cell(r.cpuVsSmallest), cell(r.redisExecMsPerRun), cell(r.shareMin), cell(r.shareMax), cell(r.cpuMsPerRun), cell(r.latenessP99Ms)]),
      ),
    );
  }
  return parts.join('\n\n');
}
