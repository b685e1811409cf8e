/**
 * [clock] A node whose wall clock steps keeps its jobs on time: real node processes under
 * libfaketime with a time file (FAKETIME_TIMESTAMP_FILE, re-read at every call; the monotonic
 * clock left real), stepped back and forward by an hour while they run. Every job keeps its
 * period within one period plus 1 s across the step (measured on CLOCK_MONOTONIC); the step
 * is logged once with its size.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnLeasehold, type NodeProc } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { readJsonLines } from './helpers/runs.js';

const FAKETIME_LIB = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1'].find((p) => existsSync(p));
const skip = FAKETIME_LIB ? false : process.env['CI'] ? false : 'libfaketime is not installed (.ci/run installs it)';
const dir = mkdtempSync(join(tmpdir(), 'leasehold-clock-step-'));
let seq = 0;

interface Start {
  job: string;
  tick: number;
  inst: string;
  mono: number;
}

function readStarts(path: string): Start[] {
  return readJsonLines<Start>(path);
}

/** Starts nodes; node i runs under libfaketime with its own time file when `stepped(i)`. */
function nodes(n: number, redis: TestRedis | undefined, stepped: (i: number) => boolean) {
  const name = `c${++seq}`;
  const runLog = join(dir, `${name}.jsonl`);
  const timeFile = join(dir, `${name}.faketime`);
  writeFileSync(timeFile, '+0\n');
  const procs: NodeProc[] = [];
  for (let i = 0; i < n; i++) {
    const preload = stepped(i) ? { LD_PRELOAD: FAKETIME_LIB ?? '', FAKETIME_TIMESTAMP_FILE: timeFile, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' } : undefined;
    procs.push(
      spawnLeasehold(
        // Without Redis the node runs alone, and says so (its installation jobs need it).
        ['start', '--jobs', 'test/fixtures/jobs-clock-step.mjs', '--port', '0', ...(redis ? [] : ['--local'])],
        { ...(redis ? { REDIS_URL: redis.url } : { REDIS_URL: undefined }), LEASEHOLD_PREFIX: name, LEASEHOLD_INSTANCE_ID: `n${i}`, RUN_LOG: runLog, LEASEHOLD_SHUTDOWN_GRACE: '1s', LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
        preload ? { preload } : {},
      ),
    );
  }
  const ready = Promise.all(procs.map((p) => p.waitFor((l) => l['msg'] === 'leasehold runner started', 15_000)));
  return {
    procs,
    runLog,
    ready,
    step: (spec: string) => writeFileSync(timeFile, `${spec}\n`),
    stop: async () => {
      for (const p of procs) if (p.child.exitCode === null) p.kill('SIGTERM');
      await Promise.all(procs.map((p) => p.exited));
    },
  };
}

/** The longest gap between two starts of `job` (all nodes together) within [from, to], ms of monotonic time. */
function longestGap(starts: Start[], job: string, from: number, to: number): number {
  const t = starts.filter((s) => s.job === job && s.mono >= from && s.mono <= to).map((s) => s.mono).sort((a, b) => a - b);
  assert.ok(t.length >= 3, `${job} ran ${t.length} times in the window`);
  let gap = Math.max(t[0] as number - from, to - (t.at(-1) as number));
  for (let i = 1; i < t.length; i++) gap = Math.max(gap, (t[i] as number) - (t[i - 1] as number));
  return gap;
}

const monoNow = (): number => Number(process.hrtime.bigint() / 1_000_000n);
const JOBS = ['rate-instance', 'cron-instance', 'delay-instance', 'rate-installation', 'cron-installation'];

async function stepScenario(spec: string, redis: TestRedis | undefined, n: number): Promise<void> {
  const c = nodes(n, redis, (i) => i === 0);
  try {
    await c.ready;
    // The jobs start at once and keep their period from the first second: 3 s on, the window
    // (from 2 s before the step) holds only runs of a running node.
    await sleep(3_000);
    const from = monoNow();
    c.step(spec);
    // The step is seen at the next wake (a 1 s job wakes every second) and a lease is 5 s: 8 s
    // after it holds every wake that could repeat the warning, and a lease taken before it run out.
    await sleep(8_000);
    const to = monoNow();
    const starts = readStarts(c.runLog);
    // Every job's longest gap and last start (ms from the step), so that a failure tells one
    // job's schedule from a node that stopped altogether.
    const gaps = JOBS.map((job) => ({ job, gap: longestGap(starts, job, from - 2_000, to), last: Math.max(...starts.filter((s) => s.job === job).map((s) => s.mono)) - from }));
    const seen = `gaps across the step ${spec}: ${gaps.map((g) => `${g.job} ${g.gap} ms (last start at ${g.last} ms)`).join(', ')}; the node logged at warn: ${JSON.stringify(c.procs.flatMap((p) => p.lines.filter((l) => Number(l['level']) >= 40).map((l) => l['msg'])))}`;
    for (const { job, gap } of gaps) {
      // A 1 s job: one period plus 1 s, and the run's own start lag.
      assert.ok(gap <= 2_200, `${job}: ${gap} ms without a start; ${seen}`);
      // Instance jobs run on every node: no node runs a burst.
      for (let i = 0; i < n; i++) {
        const inWindow = starts.filter((s) => s.job === job && s.mono >= from && s.mono <= to && (job.endsWith('installation') || s.inst === `n${i}`)).length;
        assert.ok(inWindow <= (to - from) / 1_000 + 2, `${job}: ${inWindow} starts in ${to - from} ms: no burst`);
      }
      if (job.endsWith('installation')) {
        const ticks = starts.filter((s) => s.job === job).map((s) => s.tick);
        assert.equal(new Set(ticks).size, ticks.length, `${job}: a tick ran twice`);
      }
    }
    const warnings = c.procs[0]?.lines.filter((l) => /wall clock stepped/.test(String(l['msg']))) ?? [];
    assert.equal(warnings.length, 1, `the step is logged once: ${JSON.stringify(warnings)}`);
    assert.match(String(warnings[0]?.['msg']), spec.startsWith('-') ? /stepped back by 1h/ : /stepped forward by 1h/);
  } finally {
    await c.stop();
  }
}

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

// Each scenario has nodes, a prefix and a time file of its own, and waits in real time: they run together.
describe('a wall clock stepped by an hour', { concurrency: true }, () => {
  test('one node without Redis, wall clock stepped back an hour: every job keeps its period', { skip }, () => stepScenario('-1h', undefined, 1));
  test('one node without Redis, wall clock stepped forward an hour: every job keeps its period, no burst', { skip }, () => stepScenario('+1h', undefined, 1));
  test('three nodes with Redis, one wall clock stepped back an hour: every job keeps its period, every installation tick runs once', { skip }, () => stepScenario('-1h', redis, 3));
  test('one node with Redis, wall clock stepped forward an hour: every job keeps its period', { skip }, () => stepScenario('+1h', redis, 1));
});
