/**
 * Installation jobs across real node processes and a real Redis (SPEC 4): exactly once
 * per tick, fixedDelay across nodes, a node with a skewed clock, lease loss, failover,
 * fencing tokens.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { spawnLeasehold, type NodeProc } from './helpers/node.js';
import { readRuns, duplicateTicks, overlaps, waitForRuns, type RunLine } from './helpers/runs.js';
import { haveTool } from './helpers/tools.js';

let redis: TestRedis;
const dir = mkdtempSync(join(tmpdir(), 'leasehold-cluster-'));
let seq = 0;

before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

function cluster(n: number, jobs: string[], extra: (i: number) => Record<string, string> = () => ({}), preload: (i: number) => Record<string, string> | undefined = () => undefined) {
  const prefix = `t${++seq}`;
  const runLog = join(dir, `${prefix}.jsonl`);
  const nodes: NodeProc[] = [];
  for (let i = 0; i < n; i++) {
    const p = preload(i);
    nodes.push(
      spawnLeasehold(
        ['start', '--jobs', 'test/fixtures/jobs-cluster.mjs', '--port', '0'],
        { REDIS_URL: redis.url, LEASEHOLD_PREFIX: prefix, LEASEHOLD_INSTANCE_ID: `n${i}`, RUN_LOG: runLog, ONLY_JOBS: jobs.join(','), LEASEHOLD_SHUTDOWN_GRACE: '1s', LOG_LEVEL: 'info', ...extra(i) },
        p ? { preload: p } : {},
      ),
    );
  }
  const ready = Promise.all(nodes.map((node) => node.waitFor((l) => l['msg'] === 'leasehold runner started', 15_000)));
  const stop = async () => {
    for (const node of nodes) if (node.child.exitCode === null) node.kill('SIGTERM');
    await Promise.all(nodes.map((node) => node.exited));
  };
  return { nodes, runLog, prefix, ready, stop };
}

/** Ticks in [from, to] of a 1 s grid. */
function secondTicks(from: number, to: number): number[] {
  const out: number[] = [];
  for (let t = Math.ceil(from / 1000) * 1000; t <= to; t += 1000) out.push(t);
  return out;
}

/** One run of three nodes, judged by the two tests after it: what the ticks ran, and the fencing tokens they held. */
describe('three nodes for 12 s', () => {
  let t0 = 0;
  let t1 = 0;
  let lines: RunLine[] = [];
  before(async () => {
    const c = cluster(3, ['cron-1s', 'rate-1s', 'delay-700ms', 'fast-0ms']);
    try {
      await c.ready;
      t0 = Date.now();
      // 12 s: nine whole ticks of each job judged one by one (none twice, none missed, none early,
      // spread over the nodes) and a dozen fixedDelay gaps each checked against the previous end.
      await sleep(12_000);
      t1 = Date.now();
    } finally {
      await c.stop();
    }
    lines = readRuns(c.runLog);
  });

  test('three nodes: every cron and fixedRate tick runs exactly once, fixedDelay waits after the previous end on any node', () => {
    for (const job of ['cron-1s', 'rate-1s', 'fast-0ms']) {
      assert.deepEqual(duplicateTicks(lines, job), [], `${job}: no tick twice`);
      const ran = new Set(lines.filter((l) => l.job === job && l.ev === 'start').map((l) => l.tick));
      const window = secondTicks(t0 + 1500, t1 - 1500);
      assert.ok(window.length >= 8);
      const missing = window.filter((t) => !ran.has(t));
      assert.deepEqual(missing.map((t) => new Date(t).toISOString()), [], `${job}: every tick of the window ran`);
      const insts = new Set(lines.filter((l) => l.job === job).map((l) => l.inst));
      assert.ok(insts.size >= 2, `${job}: shared between nodes (${[...insts].join(',')})`);
      for (const l of lines.filter((x) => x.job === job && x.ev === 'start')) {
        assert.ok(l.t >= l.tick - 5, `${job}: never early (${l.t - l.tick} ms)`);
      }
    }
    const delay = lines.filter((l) => l.job === 'delay-700ms').sort((a, b) => a.t - b.t);
    const starts = delay.filter((l) => l.ev === 'start');
    assert.ok(starts.length >= 10, `fixedDelay ran ${starts.length} times`);
    assert.deepEqual(duplicateTicks(lines, 'delay-700ms'), []);
    assert.deepEqual(overlaps(lines, 'delay-700ms'), []);
    for (let i = 1; i < starts.length; i++) {
      const prev = starts[i - 1] as RunLine;
      const end = delay.find((l) => l.ev === 'end' && l.tick === prev.tick);
      assert.ok(end, 'previous run ended');
      const gap = (starts[i] as RunLine).t - end.t;
      assert.ok(gap >= 690, `fixedDelay: start ${gap} ms after the previous end (${prev.inst} → ${(starts[i] as RunLine).inst})`);
      assert.ok(gap < 1_700, `fixedDelay: not much later than the delay: ${gap} ms`);
    }
    // A fixedDelay job has no shared tick: its claims rank by the job alone, so its runs stay on
    // one node while that node lives (the spread tests kill it and watch the runs move on).
  });

  test('fencing tokens grow strictly across ticks, whichever node claims', () => {
    for (const job of ['cron-1s', 'rate-1s', 'fast-0ms']) {
      const starts = lines.filter((l) => l.job === job && l.ev === 'start').sort((a, b) => a.tick - b.tick);
      assert.ok(starts.length >= 4);
      assert.ok(new Set(starts.map((l) => l.inst)).size >= 2, `${job}: claimed by more than one node`);
      for (let i = 1; i < starts.length; i++) {
        assert.ok((starts[i]?.token ?? 0) > (starts[i - 1]?.token ?? 0), `${job}: token ${starts[i]?.token} after ${starts[i - 1]?.token}`);
      }
    }
  });
});

const FAKETIME_LIB = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1'].find((p) => existsSync(p));

test('a node whose clock is 2 s fast runs no tick early and none twice, and still takes part', async (t) => {
  if (!haveTool(t, FAKETIME_LIB !== undefined, 'libfaketime is not installed (Debian package faketime; .ci/run installs it)')) return;
  const c = cluster(
    3,
    ['cron-1s', 'fast-0ms', 'rate-1s'],
    (i): Record<string, string> => (i === 0 ? { CLOCK_SKEW_MS: '2000' } : {}),
    (i) => (i === 0 ? { LD_PRELOAD: FAKETIME_LIB ?? '', FAKETIME: '+2s', FAKETIME_DONT_FAKE_MONOTONIC: '1', FAKETIME_NO_CACHE: '1' } : undefined),
  );
  await c.ready;
  await sleep(9_000);
  // With the others gone the fast node must carry every tick itself, on time: it takes part
  // (while all three run, which node wins a tick is a race it may keep losing).
  const othersGoneAt = Date.now();
  for (const node of c.nodes.slice(1)) node.kill('SIGTERM');
  await Promise.all(c.nodes.slice(1).map((node) => node.exited));
  await sleep(5_000);
  const endAt = Date.now();
  await c.stop();
  const lines = readRuns(c.runLog);
  const skewed = lines.filter((l) => l.inst === 'n0' && l.ev === 'start');
  assert.ok(skewed.length > 0, 'the fast node still runs ticks');
  for (const job of ['cron-1s', 'fast-0ms', 'rate-1s']) {
    const ran = new Set(lines.filter((l) => l.job === job && l.ev === 'start').map((l) => l.tick));
    const alone = secondTicks(othersGoneAt + 1_500, endAt - 1_500);
    assert.deepEqual(alone.filter((t) => !ran.has(t)).map((t) => new Date(t).toISOString()), [], `${job}: the fast node alone runs every tick`);
  }
  const firstStart = Math.min(...lines.filter((l) => l.ev === 'start').map((l) => l.t));
  for (const job of ['cron-1s', 'fast-0ms', 'rate-1s']) {
    assert.deepEqual(duplicateTicks(lines, job), [], `${job}: none twice`);
    for (const l of lines.filter((x) => x.job === job && x.ev === 'start')) {
      assert.ok(l.t >= l.tick - 10, `${job} on ${l.inst}: started ${l.tick - l.t} ms early`);
      // A tick whose claim found the lease held may run late within the misfire grace (one
      // interval here), and a fixedRate job started without initialDelay first runs the current
      // period's tick if nobody ran it: at the cluster's start that run may be a period late.
      const catchUp = job === 'rate-1s' && l.tick < firstStart;
      assert.ok(l.t - l.tick < (catchUp ? 2_000 : 1_500), `${job} on ${l.inst}: started ${l.t - l.tick} ms late`);
    }
  }
  // The skewed node itself saw the skew and scheduled on Redis time.
  assert.ok(c.nodes[0]?.lines.some((l) => String(l['msg']).includes('off Redis time')), 'the node logs its offset');
});

test('lease loss: deleting the key, or another owner in it, aborts the run as lockLost within the lease time and leaves the other owner\'s key alone', async () => {
  const c = cluster(1, ['long-leased']);
  await c.ready;
  const r = redis.client();
  const leaseKey = `${c.prefix}:{long-leased}:lease`;
  let lines = await waitForRuns(c.runLog, (ls) => ls.some((l) => l.ev === 'start'));
  const first = lines.find((l) => l.ev === 'start') as RunLine;
  await sleep(300);
  const deletedAt = Date.now();
  await r.del(leaseKey);
  lines = await waitForRuns(c.runLog, (ls) => ls.some((l) => l.ev === 'abort' && l.tick === first.tick), 3_000);
  const abort = lines.find((l) => l.ev === 'abort' && l.tick === first.tick) as RunLine;
  assert.equal(abort.reason, 'lockLost');
  assert.ok(abort.t - deletedAt <= 1_100, `aborted ${abort.t - deletedAt} ms after the key was deleted (lease 1 s)`);
  await c.nodes[0]?.waitFor((l) => l['jobId'] === 'long-leased' && l['outcome'] === 'lockLost', 5_000);

  // Next run: another owner takes the key over.
  lines = await waitForRuns(c.runLog, (ls) => ls.filter((l) => l.ev === 'start').length >= 2, 5_000);
  const second = lines.filter((l) => l.ev === 'start')[1] as RunLine;
  const foreign = 'intruder since 2026-01-01T00:00:00.000Z tick 2026-01-01T00:00:00.000Z token 999';
  await sleep(200);
  const writtenAt = Date.now();
  await r.set(leaseKey, foreign, 'PX', 60_000);
  lines = await waitForRuns(c.runLog, (ls) => ls.some((l) => l.ev === 'abort' && l.tick === second.tick), 3_000);
  const abort2 = lines.find((l) => l.ev === 'abort' && l.tick === second.tick) as RunLine;
  assert.equal(abort2.reason, 'lockLost');
  assert.ok(abort2.t - writtenAt <= 1_100);
  await sleep(1_500);
  assert.equal(await r.get(leaseKey), foreign, 'the other owner\'s lease is never deleted or overwritten');
  await r.del(leaseKey);
  await c.stop();
});

test('lease loss: Redis frozen (SIGSTOP) mid-run aborts the run as lockLost within the lease time', async () => {
  const c = cluster(1, ['long-leased']);
  await c.ready;
  const lines0 = await waitForRuns(c.runLog, (ls) => ls.some((l) => l.ev === 'start'));
  const run = lines0.find((l) => l.ev === 'start') as RunLine;
  await sleep(200);
  const frozenAt = Date.now();
  redis.pause();
  try {
    const lines = await waitForRuns(c.runLog, (ls) => ls.some((l) => l.ev === 'abort' && l.tick === run.tick), 3_000);
    const abort = lines.find((l) => l.ev === 'abort' && l.tick === run.tick) as RunLine;
    assert.equal(abort.reason, 'lockLost');
    assert.ok(abort.t - frozenAt <= 1_100, `aborted ${abort.t - frozenAt} ms after Redis froze (lease 1 s, started ${frozenAt - run.t} ms before)`);
  } finally {
    redis.resume();
  }
  await c.stop();
});

test('kill -9 of the node holding a lease: another node runs the job within one lease time plus one interval, never overlapping', async () => {
  const c = cluster(3, ['holder']);
  await c.ready;
  const lines0 = await waitForRuns(c.runLog, (ls) => ls.some((l) => l.ev === 'start'), 10_000);
  const victimRun = lines0.find((l) => l.ev === 'start') as RunLine;
  const victim = c.nodes[Number(victimRun.inst.slice(1))];
  victim?.kill('SIGKILL');
  const killedAt = Date.now();
  const lines = await waitForRuns(c.runLog, (ls) => ls.some((l) => l.ev === 'start' && l.t > killedAt && l.inst !== victimRun.inst), 8_000);
  const next = lines.find((l) => l.ev === 'start' && l.t > killedAt && l.inst !== victimRun.inst) as RunLine;
  assert.ok(next.t - killedAt <= 2_000 + 2_000 + 500, `taken over ${next.t - killedAt} ms after the kill (lease 2 s, interval 2 s)`);
  assert.ok(next.t >= victimRun.t + 2_000 - 50, 'not before the dead holder\'s lease expired');
  await sleep(4_000);
  await c.stop();
  const all = readRuns(c.runLog);
  assert.deepEqual(duplicateTicks(all, 'holder'), []);
  // The victim's run never ended; the others must not overlap each other.
  const survivors = all.filter((l) => l.inst !== victimRun.inst);
  assert.deepEqual(overlaps(survivors, 'holder'), []);
});

test('a job that blocks the event loop past its lease is recorded lockLost, with a warning naming the job', async () => {
  const c = cluster(1, ['blocker']);
  await c.ready;
  const node = c.nodes[0] as NodeProc;
  const ended = await node.waitFor((l) => l['jobId'] === 'blocker' && typeof l['outcome'] === 'string', 10_000);
  assert.equal(ended['outcome'], 'lockLost');
  const warning = await node.waitFor((l) => l['jobId'] === 'blocker' && String(l['msg']).includes('blocked the event loop'), 2_000);
  assert.match(String(warning['msg']), /job "blocker".*worker thread/);
  await c.stop();
});
