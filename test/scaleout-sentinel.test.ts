/**
 * Redis Sentinel (SPEC 7, REDIS_SENTINELS with REDIS_SENTINEL_NAME): real nodes against a
 * real master, two replicas and three Sentinels, failed over with `SENTINEL FAILOVER` while the
 * jobs run every second. Replication is asynchronous, so writes the old master took after
 * the replica was promoted are lost: this measures how often that runs a tick twice or loses
 * a count, what the fencing token tells the two runs apart by (the later never carries a greater
 * token than the earlier: the new master's counter is behind the old one's), and that `min-replicas-to-write`
 * on the servers closes the gap.
 *
 * `SCALEOUT_FAILOVERS=<n>` fails over n times per setup (default 1) and adds the master-kill
 * measurement; `SCALEOUT_BODY_MS=<ms>` makes each run last that long (default 50).
 * `docs/reliability.md` records runs with more.
 */
import { once } from 'node:events';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { keys as keyNames } from '../src/redis/keys.js';
import { createRedis, whenReady, type RedisClient } from '../src/redis/connection.js';
import { closeRedis } from '../src/redis/close.js';
import { until } from './helpers/wait.js';
import { startNodes, writeScaleoutJobs, TICK_JOBS } from './helpers/cluster.js';
import { runLeasehold } from './helpers/node.js';
import { readRuns, waitForRuns, type RunLine } from './helpers/runs.js';
import { MASTER_NAME, startSentinels, type TestSentinels } from './helpers/sentinel.js';

const ROUNDS = Math.max(1, Math.min(100, Number(process.env['SCALEOUT_FAILOVERS'] ?? 1) || 1));
/** How long each run of the 1 s jobs lasts, ms (`SCALEOUT_BODY_MS`, default 50). */
const BODY_MS = Math.max(0, Math.min(900, Number(process.env['SCALEOUT_BODY_MS'] ?? 50) || 0));
const dir = mkdtempSync(join(tmpdir(), 'leasehold-scaleout-sentinel-'));
const jobs = writeScaleoutJobs(dir);
let setup: TestSentinels;

before(async () => {
  setup = await startSentinels({ replicas: 2 });
});
after(async () => {
  await setup?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Figures {
  failovers: number;
  /** Ticks of all jobs that ran in the measured time. */
  ticks: number;
  /** Ticks that ran twice, and how many of those had the same fencing token in both runs. */
  twice: number;
  sameToken: number;
  /** Ticks run twice whose later run carries a greater token than an earlier run (must be none), told run by run. */
  laterGreater: string[];
  /** Ticks that ran twice away from any failover (must be 0). */
  twiceElsewhere: number;
  /** Fencing tokens handed to two different ticks of a job (the counter went back). */
  reusedTokens: number;
  /** Runs that ended but are missing from the counters (`succeeded`, or `lost` when a claim recorded the run first). */
  uncounted: number;
  /** Ticks (of all jobs) that did not run at all. */
  missed: number;
  /** From the failover's start (SENTINEL FAILOVER, or the kill) to the Sentinels announcing the new master, ms. */
  announcedMs: number[];
  /** From the failover's start to the first tick every job ran again, ms. */
  resumedMs: number[];
}

type Failover = 'sentinel-failover' | 'kill-master';

/**
 * Runs three nodes, fails the master over `rounds` times, and counts. With `rejoinAfterMs`
 * the old master is made a replica that long after the announcement (as an operator would),
 * instead of waiting the 8 to 18 s the Sentinels take to do it.
 */
async function measure(prefix: string, how: Failover, rounds: number, rejoinAfterMs?: number): Promise<Figures> {
  const runLog = join(dir, `${prefix}.jsonl`);
  const announced: number[] = [];
  const resumed: number[] = [];
  const windows: Array<[number, number]> = [];
  const nodes = await startNodes(3, jobs, {
    REDIS_SENTINELS: setup.sentinels.join(','),
    REDIS_SENTINEL_NAME: MASTER_NAME,
    LEASEHOLD_PREFIX: prefix,
    RUN_LOG: runLog,
    JOB_BODY_MS: String(BODY_MS),
  });
  const t0 = Date.now();
  let t1 = t0;
  try {
    await sleep(2_500);
    for (let i = 0; i < rounds; i++) {
      await setup.settle();
      // Vary the failover's phase against the ticks.
      await sleep(Math.floor(Math.random() * 1_000));
      const started = Date.now();
      const old = await setup.masterPort();
      const { announcedMs } = how === 'kill-master' ? await setup.killMaster() : await setup.failover();
      announced.push(announcedMs);
      if (rejoinAfterMs !== undefined) {
        await sleep(rejoinAfterMs);
        await setup.settle(30_000, { sentinelsToo: false });
      }
      // Every job runs again, on the new master (bounded: the test fails otherwise).
      const back = started + announcedMs;
      const again = await waitForRuns(runLog, (ls) => TICK_JOBS.every((j) => ls.some((l) => l.job === j && l.ev === 'end' && l.tick > back)), 30_000).catch((err: unknown) => {
        windows.push([started - 1_000, Date.now()]); // SCALEOUT_DEBUG shows the round that failed too
        throw err;
      });
      const firstEnds = TICK_JOBS.map((j) => Math.min(...again.filter((l) => l.job === j && l.ev === 'end' && l.tick > back).map((l) => l.t)));
      resumed.push(Math.max(...firstEnds) - started);
      await sleep(1_500);
      windows.push([started - 1_000, Date.now()]);
      if (how === 'kill-master') await setup.startServer(old);
    }
    await sleep(1_500);
    t1 = Date.now();

    // The status from any node, through the Sentinels (heartbeats refused during the failover
    // may have expired: they are written again within one heartbeat).
    let body: { jobs: Array<{ id: string }>; instances: unknown[] } = { jobs: [], instances: [] };
    for (let i = 0; i < 40 && body.instances.length < 3; i++) {
      if (i > 0) await sleep(250);
      const res = await fetch(`http://127.0.0.1:${nodes.ports[2] ?? 0}/manage/jobs`);
      assert.equal(res.status, 200);
      body = (await res.json()) as typeof body;
    }
    assert.deepEqual(body.jobs.map((j) => j.id).sort(), [...TICK_JOBS, 'manual'].sort());
    assert.equal(body.instances.length, 3);
  } finally {
    await nodes.stop();
    if (process.env['SCALEOUT_DEBUG']) {
      const all = readRuns(runLog);
      for (const [a, b] of windows) {
        process.stderr.write(`# window ${new Date(a).toISOString()} .. ${new Date(b).toISOString()}\n`);
        for (const l of all.filter((x) => x.t >= a && x.t <= b)) process.stderr.write(`#   ${new Date(l.t).toISOString()} ${l.ev} ${l.job} tick ${new Date(l.tick).toISOString()} ${l.inst} token ${String(l.token)}\n`);
        for (const [i, p] of nodes.procs.entries()) {
          for (const l of p.lines) {
            const at = Date.parse(String(l['time']));
            if (at >= a && at <= b && (Number(l['level']) >= 30 || l['outcome'] !== undefined)) process.stderr.write(`#   n${i} ${String(l['time'])} ${String(l['msg']).slice(0, 160)}\n`);
          }
        }
      }
    }
  }
  const cli = await runLeasehold(['status', '--json'], { REDIS_SENTINELS: setup.sentinels.join(','), REDIS_SENTINEL_NAME: MASTER_NAME, LEASEHOLD_PREFIX: prefix });
  assert.equal(cli.code, 0, cli.stderr);
  const status = JSON.parse(cli.stdout) as { jobs: Array<{ id: string; succeeded: number }> };

  const lines = readRuns(runLog);
  const k = keyNames(prefix);
  const master = setup.node(await setup.masterPort());
  const f: Figures = { failovers: rounds, ticks: 0, twice: 0, sameToken: 0, laterGreater: [], twiceElsewhere: 0, reusedTokens: 0, uncounted: 0, missed: 0, announcedMs: announced, resumedMs: resumed };
  for (const job of TICK_JOBS) {
    const starts = lines.filter((l) => l.job === job && l.ev === 'start');
    const byTick = new Map<number, RunLine[]>();
    for (const s of starts) byTick.set(s.tick, [...(byTick.get(s.tick) ?? []), s]);
    f.ticks += byTick.size;
    for (const [tick, runs] of byTick) {
      if (runs.length < 2) continue;
      f.twice++;
      if (new Set(runs.map((r) => r.token)).size === 1) f.sameToken++;
      const byStart = [...runs].sort((a, b) => a.t - b.t);
      if (byStart.some((r, i) => i > 0 && (r.token ?? 0) > Math.min(...byStart.slice(0, i).map((e) => e.token ?? 0)))) {
        f.laterGreater.push(`${job} tick ${new Date(tick).toISOString()}: ${byStart.map((r) => `${r.inst} token ${String(r.token)} at ${new Date(r.t).toISOString()}`).join(', ')}`);
      }
      if (!windows.some(([a, b]) => tick >= a && tick <= b)) f.twiceElsewhere++;
    }
    const ticksOfToken = new Map<number | undefined, Set<number>>();
    for (const s of starts) ticksOfToken.set(s.token, (ticksOfToken.get(s.token) ?? new Set()).add(s.tick));
    for (const ticks of ticksOfToken.values()) if (ticks.size > 1) f.reusedTokens++;
    for (let t = Math.ceil((t0 + 1_500) / 1000) * 1000; t <= t1 - 1_000; t += 1000) if (!byTick.has(t)) f.missed++;
    const ended = lines.filter((l) => l.job === job && l.ev === 'end').length;
    // A run that ended while Redis refused writes had its release refused too: it is recorded
    // once, succeeded by its node or lost by the claim that reached the new master first.
    const [succeeded, lost] = (await master.hmget(k.stats(job), 'succeeded', 'lost')).map(Number);
    const counted = (succeeded ?? 0) + (lost ?? 0);
    assert.equal(status.jobs.find((j) => j.id === job)?.succeeded, succeeded, `${job}: leasehold status reads the counters`);
    f.uncounted += ended - counted;
  }
  return f;
}

function report(label: string, f: Figures): void {
  const ms = (xs: number[]): string => xs.map((x) => Math.round(x)).sort((a, b) => a - b).join('/');
  process.stderr.write(
    `# ${label}, runs of ${BODY_MS} ms: ${f.failovers} failover(s), ${f.ticks} ticks; ran twice: ${f.twice} (same fencing token in both runs: ${f.sameToken}); ` +
      `tokens given to two ticks: ${f.reusedTokens}; ended runs not counted: ${f.uncounted}; ticks missed: ${f.missed}; ` +
      `new master announced after ${ms(f.announcedMs)} ms; every job ran again after ${ms(f.resumedMs)} ms\n`,
  );
}

test('Sentinel, asynchronous replication: the nodes follow the new master; a tick runs twice only at a failover, and then never with a greater fencing token', async () => {
  const f = await measure('sn1', 'sentinel-failover', ROUNDS);
  report('SENTINEL FAILOVER, default settings', f);
  assert.equal(f.twiceElsewhere, 0, 'no tick runs twice away from a failover');
  // The failover lost the first run's claim, and with it one or more increments of the token:
  // the second run gets the same token, or a smaller one when more than one claim of the job
  // was lost. Never a greater one, so a resource that keeps the highest token refuses its writes.
  assert.deepEqual(f.laterGreater, [], 'the later run of a tick never carries a greater fencing token');
  // Lost writes lose counts, never add them.
  assert.ok(f.uncounted >= 0, `counted ${-f.uncounted} runs that did not end`);
});

test('Sentinel, the master killed: the Sentinels promote a replica and the nodes follow it', { skip: ROUNDS > 1 ? false : 'measured with SCALEOUT_FAILOVERS=<n> (n > 1)' }, async () => {
  const f = await measure('sn3', 'kill-master', ROUNDS);
  report('master killed (SIGKILL), default settings', f);
  assert.equal(f.twiceElsewhere, 0, 'no tick runs twice away from a failover');
  assert.deepEqual(f.laterGreater, [], 'the later run of a tick never carries a greater fencing token');
  assert.ok(f.uncounted >= 0);
});

test('Sentinel with one replica and min-replicas-to-write 1: the old master refuses writes once its replica is promoted, so no tick runs twice and no count is lost', async () => {
  await setup.settle();
  const master = await setup.masterPort();
  const spare = setup.servers.map((srv) => srv.port).find((p) => p !== master);
  assert.ok(spare !== undefined);
  await setup.stopServer(spare);
  try {
    for (const server of setup.servers.filter((srv) => srv.port !== spare)) {
      const c = setup.node(server.port);
      await c.config('SET', 'min-replicas-to-write', '1');
      await c.config('SET', 'min-replicas-max-lag', '10');
    }
    // Left alone, the writes stay refused until the Sentinels turn the old master into a
    // replica (8 to 18 s; SCALEOUT_FAILOVERS > 1 measures that); here it is done after 2 s.
    const f = await measure('sn2', 'sentinel-failover', 1, ROUNDS > 1 ? undefined : 2_000);
    report('SENTINEL FAILOVER, one replica, min-replicas-to-write 1', f);
    assert.equal(f.twice, 0, 'no tick ran twice');
    assert.equal(f.reusedTokens, 0, 'no fencing token was handed out twice');
    assert.equal(f.uncounted, 0, 'every run that ended is counted');
  } finally {
    for (const server of setup.servers.filter((srv) => srv.port !== spare)) await setup.node(server.port).config('SET', 'min-replicas-to-write', '0');
    await setup.startServer(spare);
  }
});

/**
 * Ends `conn` as ioredis does in the failover race, and waits for its end: the status becomes
 * `end`, with no reconnection of ioredis's own, and no close of the connection's owner was asked
 * for (the base class's disconnect, as ioredis ends it from inside).
 */
async function endAsInTheRace(conn: RedisClient): Promise<void> {
  const ended = once(conn, 'end');
  Redis.prototype.disconnect.call(conn);
  await ended;
}

test('a Sentinel connection that ends without its disconnect() or quit() being called is opened again (ioredis ends one for good when a failover is announced while it reconnects); one leasehold closes stays closed', async () => {
  let reopened = 0;
  const conn = createRedis({ target: { sentinels: setup.sentinels, sentinelName: MASTER_NAME }, role: 'lease', onReopen: (failure) => failure === undefined && reopened++ });
  try {
    await whenReady(conn, 10_000);
    await endAsInTheRace(conn);
    await until('the connection opened again', () => conn.status === 'ready', 10_000);
    assert.equal(await conn.ping(), 'PONG');
    assert.equal(reopened, 1, 'told, for the log');
  } finally {
    await closeRedis(conn, () => undefined);
  }
  await sleep(1_500);
  assert.equal(conn.status, 'end', 'closed by leasehold: not opened again');
});

test('a duplicate of a Sentinel connection (a BullMQ worker makes its blocking connection so) is opened again too, and keeps its options', async () => {
  let reopened = 0;
  const conn = createRedis({ target: { sentinels: setup.sentinels, sentinelName: MASTER_NAME }, role: 'queue', onReopen: (failure) => failure === undefined && reopened++ });
  const copy = (conn as Redis).duplicate({ connectionName: 'blocking' });
  try {
    await whenReady(copy, 10_000);
    assert.equal(copy.options.connectionName, 'blocking');
    await endAsInTheRace(copy);
    await until('the duplicate opened again', () => copy.status === 'ready', 10_000);
    assert.equal(await copy.ping(), 'PONG');
    assert.equal(reopened, 1, 'told as the connection it was made from is');
  } finally {
    copy.disconnect();
    conn.disconnect();
  }
});

test('waiting for a Sentinel connection to be ready outlasts an end it is opened again after', async () => {
  const conn = createRedis({ target: { sentinels: setup.sentinels, sentinelName: MASTER_NAME }, role: 'lease' });
  try {
    const ready = whenReady(conn, 10_000);
    await endAsInTheRace(conn); // before it was ever ready
    await ready;
    assert.equal(await conn.ping(), 'PONG');
    await endAsInTheRace(conn);
    await whenReady(conn, 10_000);
    assert.equal(conn.status, 'ready', 'an ended connection that is opened again is waited for too');
  } finally {
    const ended = once(conn, 'end');
    conn.disconnect();
    await ended;
  }
  await assert.rejects(whenReady(conn, 10_000), /Redis connection is closed/, 'one closed by its own disconnect() is not');
});

test('a Sentinel connection closed with its own disconnect() or quit() stays closed', async () => {
  const target = { sentinels: setup.sentinels, sentinelName: MASTER_NAME };
  let reopened = 0;
  const disconnected = createRedis({ target, role: 'lease', onReopen: () => reopened++ });
  const quit = createRedis({ target, role: 'stats', onReopen: () => reopened++ });
  try {
    await Promise.all([whenReady(disconnected, 10_000), whenReady(quit, 10_000)]);
    const ended = [once(disconnected, 'end'), once(quit, 'end')];
    disconnected.disconnect();
    assert.equal(await quit.quit(), 'OK');
    await Promise.all(ended);
    await sleep(1_500);
    assert.deepEqual([disconnected.status, quit.status, reopened], ['end', 'end', 0]);
  } finally {
    disconnected.disconnect();
    quit.disconnect();
  }
});
