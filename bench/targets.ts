/**
 * The targets, checked against one run's figures (a single run: the targets are
 * quoted as medians of repeated runs, so this is a guide, not the verdict).
 * @module
 */
import type { BenchResults, ScenarioResult } from './harness.js';
import type { SystemName } from './protocol.js';
import type { StatusFigures } from './status.js';
import type { TimedFigures } from './timed.js';

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
  return (['bullmq', 'croner-redlock'] as const).flatMap((p) => timed(s, p) ?? []);
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
  const s3 = timed(by('S3'), 'leasehold');
  if (s3) {
    const p = peers(by('S3'));
    out.push(check('S3: leasehold p99 lateness below every peer', p.length === 0 ? null : p.every((x) => s3.latenessMs.p99 < x.latenessMs.p99), `${s3.latenessMs.p99} vs ${p.map((x) => x.latenessMs.p99).join(', ')} ms`));
    out.push(check('S3: worker CPU per run below every peer', p.length === 0 ? null : p.every((x) => s3.cpuMsPerRun < x.cpuMsPerRun), `${s3.cpuMsPerRun} vs ${p.map((x) => x.cpuMsPerRun).join(', ')} ms`));
  }
  const s4 = by('S4')?.systems.leasehold;
  if (s4 !== undefined && 'holdJobs' in s4) {
    const f: StatusFigures = s4;
    out.push(check('S4: GET /manage/jobs p99 < 50 ms with 1,000 jobs', f.manageJobs ? f.manageJobs.p99 < 50 : null, f.manageJobs ? `${f.manageJobs.p99} ms` : (f.note ?? 'not measured')));
    out.push(check('S4: a node holding 10,000 jobs < 150 MB RSS', f.holdRssMb === null ? null : f.holdRssMb < 150, `${f.holdRssMb ?? '-'} MB`));
  }
  return out;
}

/** The checks as lines of text. */
export function formatTargets(checks: readonly TargetCheck[]): string {
  return checks.map((c) => `${c.met === null ? ' ?  ' : c.met ? 'met ' : 'MISS'}  ${c.target}: ${c.detail}`).join('\n');
}
