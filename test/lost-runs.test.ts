/**
 * A run that dies with its node leaves a record (SPEC 3.4): real node processes and a real
 * Redis. The lease holder is killed (kill -9) or frozen (SIGSTOP) mid-run; once its lease has
 * expired the run is recorded once as `lost` by the next claim of another node: in the stats
 * hash, in the recent runs, in the status API and in that node's `/metrics`. A frozen holder
 * that wakes and records the same run itself never makes it count twice.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { spawnLeasehold, type NodeProc } from './helpers/node.js';
import { readRuns, type RunLine } from './helpers/runs.js';
import { until } from './helpers/wait.js';
import { startRelay } from './helpers/proxy.js';
import { memoryLogger } from './helpers/log.js';
import { createRunner, type RunEndedEvent } from '../src/index.js';

const JOB = 'long-run'; // fixedRate 1 s, lease 2 s, a 30 s run that stops at its abort

let redis: TestRedis;
const dir = mkdtempSync(join(tmpdir(), 'leasehold-lost-'));
let seq = 0;

before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

function cluster(n: number) {
  const prefix = `lost${++seq}`;
  const runLog = join(dir, `${prefix}.jsonl`);
  const nodes: NodeProc[] = [];
  for (let i = 0; i < n; i++) {
    nodes.push(spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-cluster.mjs', '--port', '0'], {
      REDIS_URL: redis.url, LEASEHOLD_PREFIX: prefix, LEASEHOLD_INSTANCE_ID: `n${i}`, RUN_LOG: runLog, ONLY_JOBS: JOB, LEASEHOLD_SHUTDOWN_GRACE: '1s', LOG_LEVEL: 'info',
    }));
  }
  const ready = Promise.all(nodes.map((node) => node.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'), 30_000)));
  const stop = async (): Promise<void> => {
    for (const node of nodes) {
      if (node.child.exitCode !== null || node.child.signalCode !== null) continue;
      node.kill('SIGCONT'); // a node left frozen by a failed test would never see its SIGTERM
      node.kill('SIGTERM');
    }
    await Promise.all(nodes.map((node) => node.exited));
  };
  const stats = (): Promise<Record<string, string>> => redis.client().hgetall(`${prefix}:{${JOB}}:stats`);
  const recent = async (): Promise<Array<Record<string, unknown>>> => (await redis.client().lrange(`${prefix}:{${JOB}}:runs`, 0, -1)).map((s) => JSON.parse(s) as Record<string, unknown>);
  return { nodes, runLog, prefix, ready, stop, stats, recent };
}

function portOf(node: NodeProc): number {
  const line = node.lines.find((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'));
  assert.ok(line, 'the node logged its HTTP port');
  return line['port'] as number;
}

/**
 * A run in progress now: the lease names its node and token, and the run log has its start and
 * no end (a run that lost its lease to a loaded machine's stall at start is not taken).
 */
async function running(c: { runLog: string; prefix: string }): Promise<RunLine> {
  let found: RunLine | undefined;
  await until('a run in progress', async () => {
    const value = await redis.client().get(`${c.prefix}:{${JOB}}:lease`);
    const m = value === null ? null : /^(\S+) since .* token (\d+)$/.exec(value);
    if (!m) return false;
    const lines = readRuns(c.runLog);
    found = lines.find((l) => l.job === JOB && l.ev === 'start' && l.inst === m[1] && l.token === Number(m[2]));
    return found !== undefined && !lines.some((l) => l.ev !== 'start' && l.token === found?.token);
  }, 20_000);
  assert.ok(found?.token !== undefined, 'the run has a fencing token');
  return found;
}

/** A tool's answer (JSON) from a node's `/mcp`. */
async function mcpCall(node: NodeProc, name: string, args: Record<string, unknown>): Promise<unknown> {
  const client = new Client({ name: 'leasehold-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${portOf(node)}/mcp`)));
  try {
    const r = await client.callTool({ name, arguments: args });
    return JSON.parse((r.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('')) as unknown;
  } finally {
    await client.close();
  }
}

/** `leasehold_job_runs_total{job, outcome}` as a node's `/metrics` says. */
async function runsMetric(node: NodeProc, outcome: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${portOf(node)}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`leasehold_job_runs_total{job="${JOB}",outcome="${outcome}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

test('a lease holder killed mid-run (kill -9): the next claim records its run once as lost, however many nodes notice', async () => {
  const c = cluster(3);
  try {
    await c.ready;
    const run = await running(c);
    const victim = c.nodes[Number(run.inst.slice(1))];
    assert.ok(victim, `node ${run.inst} runs`);
    await sleep(300);
    victim.kill('SIGKILL');
    await victim.exited;
    const killedAt = Date.now();
    // The lease (2 s) runs out; the survivors claim every second: the first claim after it records the run.
    await until('the killed run recorded lost', async () => (await c.recent()).some((r) => r['fencingToken'] === run.token), 10_000).catch(async (err: unknown) => {
      const state = await redis.client().hgetall(`${c.prefix}:{${JOB}}:state`);
      throw new Error(`${String(err)}; state ${JSON.stringify(state)}; stats ${JSON.stringify(await c.stats())}; runs ${JSON.stringify(readRuns(c.runLog))}; victim ${run.inst}`);
    });
    const noticedMs = Date.now() - killedAt;
    assert.ok(noticedMs < 5_000, `recorded ${noticedMs} ms after the kill`);
    await sleep(3_000); // more claims by both survivors: still one record
    const stats = await c.stats();
    const all = await c.recent();
    const entries = all.filter((r) => r['fencingToken'] === run.token);
    assert.equal(entries.length, 1, `one recent run for token ${run.token}: ${JSON.stringify(entries)}`);
    const lost = entries[0] ?? {};
    assert.equal(lost['outcome'], 'lost');
    assert.equal(lost['instance'], run.inst, 'the node that ran it');
    assert.equal(lost['scheduledAt'], new Date(run.tick).toISOString(), 'its tick');
    // Its start is its claim's time: at most the tick's wait (and the start's lag on a loaded machine) before the handler began.
    const claimedAt = Date.parse(String(lost['startedAt']));
    assert.ok(claimedAt <= run.t + 50 && run.t - claimedAt < 5_000, `its start time (${String(lost['startedAt'])}, the handler began ${new Date(run.t).toISOString()})`);
    // Every run recorded once: a start-up stall may have lost another run's lease (also recorded once).
    const tokens = all.map((r) => r['fencingToken']);
    assert.equal(new Set(tokens).size, tokens.length, `one record per token: ${tokens.join(', ')}`);
    assert.equal(Number(stats['lost']), all.filter((r) => r['outcome'] === 'lost').length, 'the stats hash counts each lost run once');
    assert.equal(Number(stats['runs']), all.length, 'runs equal the recorded runs');
    assert.equal(stats['lastOutcome'], 'lost', 'the last outcome (the survivors\' runs have not ended)');

    const survivors = c.nodes.filter((n) => n !== victim);
    const detail = (await (await fetch(`http://127.0.0.1:${portOf(survivors[0] as NodeProc)}/manage/jobs/${JOB}`)).json()) as { lost: number; recentRuns: Array<{ outcome: string; fencingToken: number | null }> };
    assert.equal(detail.lost, Number(stats['lost']), 'the status API counts it');
    assert.deepEqual(detail.recentRuns.filter((r) => r.fencingToken === run.token).map((r) => r.outcome), ['lost']);
    const viaMcp = (await mcpCall(survivors[1] as NodeProc, 'get_job', { id: JOB })) as typeof detail;
    assert.equal(viaMcp.lost, Number(stats['lost']), 'MCP\'s get_job counts it');
    assert.deepEqual(viaMcp.recentRuns.filter((r) => r.fencingToken === run.token).map((r) => r.outcome), ['lost']);
    const listed = (await mcpCall(survivors[1] as NodeProc, 'list_jobs', {})) as { jobs: Array<{ id: string; lost?: number }> };
    assert.equal(listed.jobs.find((j) => j.id === JOB)?.lost, Number(stats['lost']), 'MCP\'s list_jobs shows it');
    // The survivor whose claim found it logs it and counts it in its /metrics; no other node does.
    const told = survivors.map((n) => n.lines.filter((l) => l['outcome'] === 'lost' && l['jobId'] === JOB));
    assert.equal(told.flat().filter((l) => l['runId'] === `lost-${run.token}`).length, 1, 'one node logs the lost run');
    const counted = await Promise.all(survivors.map((n) => runsMetric(n, 'lost')));
    assert.deepEqual(counted, told.map((lines) => lines.length), 'leasehold_job_runs_total{outcome="lost"} of each survivor counts the lost runs it found');
  } finally {
    await c.stop();
  }
});

test('a lease holder frozen past its lease (SIGSTOP), taken over, then woken: its run counts once', async () => {
  const c = cluster(2);
  try {
    await c.ready;
    const run = await running(c);
    const victim = c.nodes[Number(run.inst.slice(1))];
    assert.ok(victim);
    await sleep(300);
    victim.kill('SIGSTOP');
    // The other node's next claim after the lease ran out records the frozen run lost.
    await until('the frozen run recorded lost', async () => (await c.recent()).some((r) => r['fencingToken'] === run.token && r['outcome'] === 'lost'), 10_000);
    victim.kill('SIGCONT');
    // It wakes, finds its lease gone, aborts its run as lockLost and records it: refused.
    await until('the woken run to end', () => readRuns(c.runLog).some((l) => l.ev === 'abort' && l.inst === run.inst && l.tick === run.tick), 10_000);
    await sleep(2_000); // its stats flush (every 300 ms) and a retry or two
    const stats = await c.stats();
    const all = await c.recent();
    assert.deepEqual(all.filter((r) => r['fencingToken'] === run.token).map((r) => r['outcome']), ['lost'], 'one recent run for the token: the woken node\'s own record is refused');
    const tokens = all.map((r) => r['fencingToken']);
    assert.equal(new Set(tokens).size, tokens.length, `one record per token: ${tokens.join(', ')}`);
    assert.equal(Number(stats['lost']), all.filter((r) => r['outcome'] === 'lost').length);
    assert.equal(Number(stats['lockLost']), all.filter((r) => r['outcome'] === 'lockLost').length);
    assert.equal(Number(stats['runs']), all.length, 'runs equal the recorded runs');
  } finally {
    await c.stop();
  }
});

test('a lone holder frozen past its lease then woken: one record for its token, lost or lockLost, never both', async () => {
  const c = cluster(1);
  try {
    await c.ready;
    const run = await running(c);
    const victim = c.nodes[0] as NodeProc;
    await sleep(300);
    victim.kill('SIGSTOP');
    await sleep(3_500);
    victim.kill('SIGCONT');
    await until('the woken run to end', () => readRuns(c.runLog).some((l) => l.ev === 'abort' && l.tick === run.tick), 10_000);
    await sleep(3_000); // its stats flush, and its next claims
    const stats = await c.stats();
    const all = await c.recent();
    const entries = all.filter((r) => r['fencingToken'] === run.token);
    assert.equal(entries.length, 1, `one recent run for token ${run.token}: ${JSON.stringify(entries)}`);
    assert.ok(entries[0]?.['outcome'] === 'lost' || entries[0]?.['outcome'] === 'lockLost', String(entries[0]?.['outcome']));
    const tokens = all.map((r) => r['fencingToken']);
    assert.equal(new Set(tokens).size, tokens.length, `one record per token: ${tokens.join(', ')}`);
    assert.equal(Number(stats['lost']) + Number(stats['lockLost']), all.filter((r) => r['outcome'] === 'lost' || r['outcome'] === 'lockLost').length, `lost ${stats['lost']}, lockLost ${stats['lockLost']}`);
  } finally {
    await c.stop();
  }
});

/**
 * A lone node on `own` with one installation job, `digest`, every second: its first run waits
 * until `finish()` is called, the others end at once.
 */
function gatedDigest(own: TestRedis, prefix: string, lease?: string) {
  let finish = (): void => undefined;
  const gate = new Promise<void>((resolve) => (finish = resolve));
  let first = true;
  const runner = createRunner({ redisUrl: own.url, prefix, instanceId: 'lone', logger: memoryLogger().logger, shutdownGrace: '1s' });
  const ended: RunEndedEvent[] = [];
  runner.on('runEnded', (e) => ended.push(e));
  runner.add({
    id: 'digest', scope: 'installation', fixedRate: '1s', ...(lease === undefined ? {} : { lease }),
    run: () => {
      if (!first) return undefined;
      first = false;
      return gate;
    },
  });
  return { runner, ended, finish: () => finish() };
}

test('a run that ends while Redis is down, its lease not released at its end, is recorded once: by its node, or lost by the claim that takes the lease after the restart', async (t) => {
  const own = await startRedis({ appendonly: true });
  // Stopped however the test ends: a failed wait must not leave the server running.
  t.after(() => own.stop());
  const { runner, ended, finish } = gatedDigest(own, 'down', '3s');
  const recent = async (): Promise<Array<Record<string, unknown>>> => (await own.client().lrange('down:{digest}:runs', 0, -1)).map((s) => JSON.parse(s) as Record<string, unknown>);
  try {
    await runner.start();
    await until('the first run to hold its lease', async () => (await own.client().get('down:{digest}:lease')) !== null, 10_000);
    const token = Number(/ token (\d+)$/.exec(String(await own.client().get('down:{digest}:lease')))?.[1]);
    await own.kill();
    finish();
    await until('the run to end', () => ended.some((e) => e.fencingToken === token), 10_000);
    const end = ended.find((e) => e.fencingToken === token);
    assert.equal(end?.outcome, 'succeeded');
    assert.equal(end?.leaseLost, true, 'its release was not confirmed: its record counts only if no claim recorded the token lost');
    await own.restart();
    // The lease expires 3 s after its last extension; the claims after it run the job again.
    await until('runs after the restart', async () => (await recent()).filter((r) => typeof r['fencingToken'] === 'number' && r['fencingToken'] > token).length >= 2, 20_000);
    await sleep(1_500); // the node's stats flush
  } finally {
    await runner.stop();
  }
  try {
    const all = await recent();
    // A claim sent while Redis was down fails (redisError) and is recorded without a token.
    const tokens = all.map((r) => r['fencingToken']).filter((t) => typeof t === 'number');
    assert.equal(new Set(tokens).size, tokens.length, `one record per token: ${JSON.stringify(all.map((r) => `${String(r['fencingToken'])} ${String(r['outcome'])}`))}`);
    const stats = await own.client().hgetall('down:{digest}:stats');
    const seen = JSON.stringify({ stats, runs: all.map((r) => `${String(r['fencingToken'])} ${String(r['outcome'])} ${String(r['code'] ?? '')}`) });
    assert.equal(Number(stats['succeeded']) + Number(stats['lost']), tokens.length, `succeeded + lost are the ${tokens.length} runs that held a lease: ${seen}`);
  } finally {
    await own.stop();
  }
});

test('a run whose lease could not be released as it ended (Redis down) releases it once Redis is back: the job runs at its next tick after the restart, not when the lease expires, and the run keeps its own outcome', async (t) => {
  const own = await startRedis({ appendonly: true });
  // Stopped however the test ends: a failed wait must not leave the server running.
  t.after(() => own.stop());
  // The default lease, 30 s: left to expire, it would hold the job for about 30 ticks after Redis is back.
  const { runner, ended, finish } = gatedDigest(own, 'retry');
  let token = 0;
  let restartedAt = 0;
  try {
    await runner.start();
    await until('the first run to hold its lease', async () => (await own.client().get('retry:{digest}:lease')) !== null, 10_000);
    token = Number(/ token (\d+)$/.exec(String(await own.client().get('retry:{digest}:lease')))?.[1]);
    await own.kill();
    finish();
    await until('the run to end', () => ended.some((e) => e.fencingToken === token), 10_000);
    assert.equal(ended.find((e) => e.fencingToken === token)?.leaseLost, true, 'its release failed: the run ends unconfirmed');
    await sleep(1_000);
    await own.restart();
    restartedAt = Date.now();
    await until('a run of the job after the restart', () => ended.some((e) => e.outcome === 'succeeded' && (e.fencingToken ?? 0) > token), 25_000);
    const next = ended.find((e) => e.outcome === 'succeeded' && (e.fencingToken ?? 0) > token);
    assert.ok(next !== undefined && next.scheduledAt - restartedAt < 5_000, `the job ran again ${next ? next.scheduledAt - restartedAt : '-'} ms after Redis was back`);
    await sleep(1_500); // the node's stats flush
  } finally {
    await runner.stop();
  }
  try {
    const runs = (await own.client().lrange('retry:{digest}:runs', 0, -1)).map((s) => JSON.parse(s) as Record<string, unknown>);
    const listed = JSON.stringify(runs.map((r) => `${String(r['fencingToken'])} ${String(r['outcome'])}`));
    assert.equal(runs.find((r) => r['fencingToken'] === token)?.['outcome'], 'succeeded', `the run recorded with its own outcome: ${listed}`);
    assert.equal(Number((await own.client().hget('retry:{digest}:stats', 'lost')) ?? 0), 0, `no run recorded lost: ${listed}`);
  } finally {
    await own.stop();
  }
});

test('a claim whose answer never came is refused when Redis reaches it late: its tick counted once (failed by its node, or missed), never lost, and no lease of it holds the job up', async (t) => {
  const own = await startRedis();
  // Stopped however the test ends: a failed wait must not leave the server running.
  t.after(() => own.stop());
  const runner = createRunner({ redisUrl: own.url, prefix: 'phantom', instanceId: 'lone', logger: memoryLogger().logger, shutdownGrace: '1s', recentRuns: 200 });
  const ended: RunEndedEvent[] = [];
  runner.on('runEnded', (e) => ended.push(e));
  // The default lease, 30 s: a lease granted to a claim nobody waits for any more would hold the
  // job for 30 ticks after Redis wakes.
  runner.add({ id: 'digest', scope: 'installation', fixedRate: '1s', run: () => undefined });
  const recent = async (): Promise<Array<Record<string, unknown>>> => (await own.client().lrange('phantom:{digest}:runs', 0, -1)).map((s) => JSON.parse(s) as Record<string, unknown>);
  let resumedAt = 0;
  try {
    await runner.start();
    await until('a counted run', async () => Number(await own.client().hget('phantom:{digest}:stats', 'runs')) > 0, 10_000);
    // Frozen across ticks: their claims wait in Redis's socket, their answers come too late.
    await sleep(1_000 - (Date.now() % 1_000) + 500);
    own.pause();
    await until('a claim given up', () => ended.some((e) => e.fencingToken === undefined && e.outcome === 'failed'), 10_000);
    await sleep(1_500);
    own.resume();
    resumedAt = Date.now();
    await until('a run of a tick due after Redis woke', () => ended.some((e) => e.outcome === 'succeeded' && e.scheduledAt > resumedAt), 10_000);
    await sleep(1_500); // the node's stats flush
  } finally {
    own.resume();
    await runner.stop();
  }
  try {
    const first = ended.find((e) => e.outcome === 'succeeded' && e.scheduledAt > resumedAt);
    assert.ok(first !== undefined && first.scheduledAt - resumedAt < 3_000, `the job ran again ${first ? first.scheduledAt - resumedAt : '-'} ms after Redis woke`);
    const all = await recent();
    const ticks = all.map((r) => String(r['scheduledAt']));
    const listed = JSON.stringify(all.map((r) => `${String(r['scheduledAt'])} ${String(r['outcome'])}`));
    assert.equal(new Set(ticks).size, ticks.length, `one record per tick: ${listed}`);
    assert.ok(all.every((r) => r['outcome'] !== 'lost'), `no run recorded lost, none was: ${listed}`);
    const stats = await own.client().hgetall('phantom:{digest}:stats');
    assert.equal(Number(stats['lost'] ?? 0), 0);
    assert.equal(Number(stats['runs']), all.length, `runs ${stats['runs']} are the ${all.length} recent runs`);
    const givenUp = ended.filter((e) => e.fencingToken === undefined && e.outcome === 'failed').map((e) => new Date(e.scheduledAt).toISOString());
    // Each tick whose claim was given up counts once: failed, when the node's record reached Redis
    // before the claim of a later tick, or missed by that claim.
    const recordedFailed = givenUp.filter((t) => all.some((r) => r['scheduledAt'] === t && r['outcome'] === 'failed')).length;
    assert.equal(recordedFailed + Number(stats['missed'] ?? 0), givenUp.length, `each claim given up is counted once, failed (${recordedFailed}) or missed (${stats['missed'] ?? 0}): ${givenUp.join(', ')}; ${listed}`);
    const ran = ended.filter((e) => e.fencingToken !== undefined).map((e) => e.scheduledAt);
    assert.equal(new Set(ran).size, ran.length, 'no tick ran twice');
  } finally {
    await own.stop();
  }
});

test('a claim Redis granted whose answer came after its node stopped waiting leaves no lease behind: the node records the tick failed, and the job runs again within seconds, not when the lease expires', async (t) => {
  const own = await startRedis();
  t.after(() => own.stop());
  // Requests reach Redis at once; its answers can be held back on the way to the node.
  const proxy = await startRelay(own.port);
  t.after(() => proxy.close());
  // The default lease, 30 s: the lease of the claim given up would hold the job for 30 ticks.
  const runner = createRunner({ redisUrl: proxy.url, prefix: 'unread', instanceId: 'lone', logger: memoryLogger().logger, shutdownGrace: '1s' });
  const ended: RunEndedEvent[] = [];
  runner.on('runEnded', (e) => ended.push(e));
  runner.add({ id: 'digest', scope: 'installation', fixedRate: '1s', run: () => undefined });
  let givenUp: RunEndedEvent | undefined;
  try {
    await runner.start();
    await until('a counted run', async () => Number(await own.client().hget('unread:{digest}:stats', 'runs')) > 0, 10_000);
    // Answers held back 2.5 s, past the claim's 2 s answer timeout, for the claim of one tick:
    // Redis grants it in time (its requests are not delayed), the node never reads the grant.
    await sleep(1_000 - (Date.now() % 1_000) + 500);
    proxy.delayReplies(2_500);
    await sleep(800);
    proxy.delayReplies(0);
    await until('a claim given up', () => (givenUp = ended.find((e) => e.fencingToken === undefined && e.outcome === 'failed')) !== undefined, 10_000);
    const after = givenUp?.scheduledAt ?? 0;
    await until('a run of a later tick', () => ended.some((e) => e.outcome === 'succeeded' && e.scheduledAt > after), 15_000);
    await sleep(1_500); // the node's stats flush
  } finally {
    await runner.stop();
  }
  const given = givenUp?.scheduledAt ?? 0;
  const next = ended.find((e) => e.outcome === 'succeeded' && e.scheduledAt > given);
  assert.ok(next !== undefined && next.scheduledAt - given <= 5_000, `the job ran again ${next ? next.scheduledAt - given : '-'} ms after the tick given up`);
  const runs = (await own.client().lrange('unread:{digest}:runs', 0, -1)).map((s) => JSON.parse(s) as Record<string, unknown>);
  const listed = JSON.stringify(runs.map((r) => `${String(r['scheduledAt'])} ${String(r['outcome'])}`));
  assert.ok(runs.some((r) => r['scheduledAt'] === new Date(given).toISOString() && r['outcome'] === 'failed'), `the tick given up is recorded failed: ${listed}`);
  assert.ok(runs.every((r) => r['outcome'] !== 'lost'), `no run recorded lost: ${listed}`);
});
