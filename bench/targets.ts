/**
 * The targets, checked against one run's figures (a single run: the targets are
 * quoted as medians of repeated runs, so this is a guide, not the verdict).
 * @module
 */
import type { BenchResults, ScenarioResult } from './harness.js';
import type { SystemName } from './protocol.js';
import type { StatusFigures } from './status.js';
import type { TimedFigures } from './timed.js';
import { scaleOutRows } from './scaleout.js';

/** leasehold's default hand-off delay (`LEASEHOLD_HANDOFF_DELAY`), which the bench nodes keep, ms. */
const HANDOFF_MS = 100;

/** S5's bound on Redis work per run at a size against the smallest: 1.15 up to 3 times the nodes, 1.3 beyond. */
function scaleBound(nodes: number, smallest: number): number {
  return nodes / smallest <= 3 ? 1.15 : 1.3;
}

/** One target and whether this run met it. */
export interface TargetCheck {
  readonly target: string;
  /** null when the figures needed are missing. */
  readonly met: boolean | null;
  readonly detail: string;
}

function timed(s: ScenarioResult | undefined, system: SystemName): TimedFigures | undefined {
  const f = s?.systems[system];
  return f !== undefined && 'runs' in f ? f : undefined;
}

function peers(s: ScenarioResult | undefined): TimedFigures[] {
  return (['bullmq', 'croner-redlock', 'node-cron'] as const).flatMap((p) => timed(s, p) ?? []);
}

/** The figures on which leasehold is compared with each peer, lower being better for each. */
const LEAD_FIGURES: ReadonlyArray<readonly [string, (f: TimedFigures) => number]> = [
  ['duplicates', (f) => f.duplicates],
  ['misses', (f) => f.misses],
  ['p50 lateness', (f) => f.latenessMs.p50],
  ['p99 lateness', (f) => f.latenessMs.p99],
  ['Redis commands per run', (f) => f.redisCommandsPerRun],
  ['Redis CPU per run', (f) => f.redisCpuMsPerRun],
  ['worker CPU per run', (f) => f.cpuMsPerRun],
];

/** Whether leasehold is at or below `peer` on every figure of {@link LEAD_FIGURES}, and where it is not. */
function leads(target: string, lh: TimedFigures, peer: TimedFigures): TargetCheck {
  const behind = LEAD_FIGURES.filter(([, get]) => get(lh) > get(peer)).map(([name, get]) => `${name} ${get(lh)} vs ${get(peer)}`);
  return check(target, behind.length === 0, behind.length === 0 ? 'at or below on every figure' : `behind on ${behind.join('; ')}`);
}

function check(target: string, met: boolean | null, detail: string): TargetCheck {
  return { target, met, detail };
}

/** Every target the figures allow to check. */
export function checkTargets(results: BenchResults): TargetCheck[] {
  const by = (name: string): ScenarioResult | undefined => results.scenarios.find((s) => s.name === name);
  const out: TargetCheck[] = [];
  for (const name of ['S1', 'S2', 'S3']) {
    const f = timed(by(name), 'leasehold');
    if (!f) continue;
    const nodeCron = timed(by(name), 'node-cron');
    if (nodeCron) out.push(leads(`${name}: leasehold leads node-cron on every figure`, f, nodeCron));
    out.push(check(`${name}: leasehold duplicates 0`, f.duplicates === 0, `${f.duplicates}`));
    if (f.crash) {
      const ok = f.crash.missesBeyondLease === 0 && f.crash.inFlightRerun === 0;
      out.push(check(`${name}: no miss beyond the dead node's lease, no in-flight tick re-run`, ok, `misses ${f.misses} (${f.crash.missesBeyondLease} beyond lease), re-runs ${f.crash.inFlightRerun}`));
    } else {
      out.push(check(`${name}: leasehold misses 0`, f.misses === 0, `${f.misses}`));
    }
  }
  const s1 = timed(by('S1'), 'leasehold');
  if (s1) {
    const p = peers(by('S1'));
    out.push(check('S1: leasehold p99 lateness <= 5 ms', s1.latenessMs.p99 <= 5, `${s1.latenessMs.p99} ms`));
    out.push(check('S1: no peer with a lower p99 lateness', p.length === 0 ? null : p.every((x) => x.latenessMs.p99 >= s1.latenessMs.p99), `peers ${p.map((x) => x.latenessMs.p99).join(', ')} ms`));
    const bound = 2 + (s1.perRun['claimsLost'] ?? 0);
    out.push(check('S1: round trips per run <= 2 + claims lost per run', s1.redisRoundTripsPerRun <= bound, `${s1.redisRoundTripsPerRun} <= ${Math.round(bound * 100) / 100}`));
    const bull = timed(by('S1'), 'bullmq');
    out.push(check('S1: fewer Redis commands and less Redis CPU per run than BullMQ', bull ? s1.redisCommandsPerRun < bull.redisCommandsPerRun && s1.redisCpuMsPerRun < bull.redisCpuMsPerRun : null, bull ? `${s1.redisCommandsPerRun} vs ${bull.redisCommandsPerRun} commands, ${s1.redisCpuMsPerRun} vs ${bull.redisCpuMsPerRun} ms` : 'no BullMQ figures'));
  }
  if (s1) {
    const floor = timed(by('S1'), 'croner-alone');
    const redlock = timed(by('S1'), 'croner-redlock');
    out.push(check('S1: Redis commands per run <= 15', s1.redisCommandsPerRun <= 15, `${s1.redisCommandsPerRun}`));
    out.push(check("S1: Redis CPU per run <= 0.6 x croner+redlock's", redlock ? s1.redisCpuMsPerRun <= 0.6 * redlock.redisCpuMsPerRun : null, redlock ? `${s1.redisCpuMsPerRun} vs ${redlock.redisCpuMsPerRun} ms` : 'no croner+redlock figures'));
    out.push(check("S1: p99 lateness <= croner-alone's + 2 ms", floor ? s1.latenessMs.p99 <= floor.latenessMs.p99 + 2 : null, floor ? `${s1.latenessMs.p99} vs ${floor.latenessMs.p99} ms` : 'no croner-alone figures'));
  }
  const s2 = timed(by('S2'), 'leasehold');
  if (s2?.crash) {
    const c = s2.crash;
    out.push(check(`S2: ticks due after the kill start within the hand-off delay + 50 ms (${HANDOFF_MS + 50} ms)`, c.afterKillMs.max <= HANDOFF_MS + 50, `max ${c.afterKillMs.max} ms, p99 ${c.afterKillMs.p99} ms; ${c.afterKillLate} ticks 50 ms late or more`));
  }
  const s3 = timed(by('S3'), 'leasehold');
  if (s3) {
    const floor = timed(by('S3'), 'croner-alone');
    const redlock = timed(by('S3'), 'croner-redlock');
    out.push(check('S3: p99 lateness <= 60 ms', s3.latenessMs.p99 <= 60, `${s3.latenessMs.p99} ms`));
    out.push(check('S3: p99 lateness <= 60 ms from the window\'s 30th second on', s3.steadyLatenessMs ? s3.steadyLatenessMs.p99 <= 60 : null, s3.steadyLatenessMs ? `${s3.steadyLatenessMs.p99} ms` : 'not measured'));
    out.push(check("S3: p99 lateness <= half croner-alone's", floor ? s3.latenessMs.p99 <= floor.latenessMs.p99 / 2 : null, floor ? `${s3.latenessMs.p99} vs ${floor.latenessMs.p99} ms` : 'no croner-alone figures'));
    out.push(check("S3: worker CPU per run <= 0.6 x croner+redlock's", redlock ? s3.cpuMsPerRun <= 0.6 * redlock.cpuMsPerRun : null, redlock ? `${s3.cpuMsPerRun} vs ${redlock.cpuMsPerRun} ms` : 'no croner+redlock figures'));
    const p = peers(by('S3'));
    out.push(check('S3: leasehold p99 lateness below every peer', p.length === 0 ? null : p.every((x) => s3.latenessMs.p99 < x.latenessMs.p99), `${s3.latenessMs.p99} vs ${p.map((x) => x.latenessMs.p99).join(', ')} ms`));
    out.push(check('S3: worker CPU per run below every peer', p.length === 0 ? null : p.every((x) => s3.cpuMsPerRun < x.cpuMsPerRun), `${s3.cpuMsPerRun} vs ${p.map((x) => x.cpuMsPerRun).join(', ')} ms`));
  }
  const s4 = by('S4')?.systems.leasehold;
  if (s4 !== undefined && 'holdJobs' in s4) {
    const f: StatusFigures = s4;
    out.push(check('S4: GET /manage/jobs p99 < 50 ms with 1,000 jobs', f.manageJobs ? f.manageJobs.p99 < 50 : null, f.manageJobs ? `${f.manageJobs.p99} ms` : (f.note ?? 'not measured')));
    out.push(check('S4: a node holding 10,000 jobs < 150 MB RSS', f.holdRssMb === null ? null : f.holdRssMb < 150, `${f.holdRssMb ?? '-'} MB`));
    out.push(check('S4: GET /manage/jobs p99 <= 20 ms with 1,000 jobs', f.manageJobs ? f.manageJobs.p99 <= 20 : null, f.manageJobs ? `${f.manageJobs.p99} ms` : (f.note ?? 'not measured')));
    out.push(check('S4: a node holding 10,000 jobs <= 100 MB RSS', f.holdRssMb === null ? null : f.holdRssMb <= 100, `${f.holdRssMb ?? '-'} MB`));
  }
  const scale = scaleOutRows(results.scenarios);
  const smallest = scale.find((r) => r.system === 'leasehold')?.nodes;
  for (const r of scale) {
    if (r.system !== 'leasehold' || smallest === undefined) continue;
    const at = `S5 N=${r.nodes}`;
    const size = by(at);
    const [lh, nodeCron] = [timed(size, 'leasehold'), timed(size, 'node-cron')];
    if (lh && nodeCron) out.push(leads(`${at}: leasehold leads node-cron on every figure`, lh, nodeCron));
    out.push(check(`${at}: leasehold duplicates 0, misses 0`, r.duplicates === 0 && r.misses === 0, `${r.duplicates}, ${r.misses}`));
    out.push(check(`${at}: each node's share of runs within 25% of 1/N`, r.shareMin >= 0.75 && r.shareMax <= 1.25, `${r.shareMin} to ${r.shareMax} x 1/N`));
    if (r.nodes === smallest) continue;
    const bound = scaleBound(r.nodes, smallest);
    out.push(check(`${at}: Redis commands per run <= ${bound} x N=${smallest}'s`, r.commandsVsSmallest <= bound, `${r.redisCommandsPerRun} (${r.commandsVsSmallest} x)`));
    out.push(check(`${at}: Redis CPU per run <= ${bound} x N=${smallest}'s`, r.cpuVsSmallest <= bound, `${r.redisCpuMsPerRun} ms (${r.cpuVsSmallest} x)`));
  }
  return out;
}

/** The checks as lines of text. */
export function formatTargets(checks: readonly TargetCheck[]): string {
  return checks.map((c) => `${c.met === null ? ' ?  ' : c.met ? 'met ' : 'MISS'}  ${c.target}: ${c.detail}`).join('\n');
}
