/**
 * Control through Redis (SPEC 6), as an operator does it with redis-cli: HSET a pause (in
 * force within a second), a resume, a new schedule (at the next fire at the latest), a bad
 * value (invalidSchedule with its cause, then fixed); and "run now" of an instance job
 * reaching every node.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { keys as keyNames } from '../src/redis/keys.js';
import type { RunStartedEvent } from '../src/runner/events.js';
import { Scheduler } from '../src/runner/runner.js';
import { createNode, type StatusNode as StatusLayer } from '../src/create/index.js';
import { memoryLogger } from './helpers/log.js';
import { until } from './helpers/wait.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const PREFIX = 'control-test';
const k = keyNames(PREFIX);

interface TestNode {
  core: Scheduler;
  layer: StatusLayer;
  started: RunStartedEvent[];
  warnings: string[];
}


describe('control through redis', () => {
  let server: TestRedis;
  let cli: Redis;
  const nodes: TestNode[] = [];
  const log = memoryLogger();

  before(async () => {
    server = await startRedis();
    cli = server.client();
    for (const id of ['c-1', 'c-2']) {
      const layer = createNode({ instanceId: id, logger: log.logger, shutdownGraceMs: 200, redis: { url: server.url }, prefix: PREFIX, adminToken: 'control-admin-token-0123456789' });
      const core = layer.core;
      core.add({ id: 'beat', fixedRate: '100ms', run: () => undefined });
      core.add({ id: 'rare', fixedRate: '1h', initialDelay: '1h', run: () => undefined });
      const started: RunStartedEvent[] = [];
      const warnings: string[] = [];
      core.on('runStarted', (e) => started.push(e));
      core.on('warning', (e) => warnings.push(e.message));
      await layer.start();
      core.start();
      nodes.push({ core, layer, started, warnings });
    }
  });
  after(async () => {
    for (const n of nodes) {
      await n.core.stop();
      await n.layer.stop();
    }
    await server.stop();
  });

  it('HSET <job>.paused true stops the job within a second on every node; false resumes it', async () => {
    await until('beats', () => nodes.every((n) => n.started.filter((e) => e.jobId === 'beat').length >= 2));
    await cli.hset(k.settings, 'beat.paused', 'true');
    const t0 = Date.now();
    await until('paused everywhere', () => nodes.every((n) => n.core.job('beat')?.state === 'paused'), 1_000);
    assert.ok(Date.now() - t0 <= 1_000);
    await sleep(150);
    const counts = nodes.map((n) => n.started.filter((e) => e.jobId === 'beat').length);
    await sleep(500);
    assert.deepEqual(nodes.map((n) => n.started.filter((e) => e.jobId === 'beat').length), counts, 'no run while paused');
    await cli.hset(k.settings, 'beat.paused', 'false');
    await until('running again', () => nodes.every((n, i) => n.started.filter((e) => e.jobId === 'beat').length > (counts[i] ?? 0)), 1_500);
  });

  it('HSET <job>.fixedRate reschedules without a restart; the status shows the new schedule', async () => {
    assert.equal(nodes[0]?.started.filter((e) => e.jobId === 'rare').length, 0);
    await cli.hset(k.settings, 'rare.fixedRate', '150ms');
    await until('rare runs at the new cadence', () => nodes.every((n) => n.started.filter((e) => e.jobId === 'rare').length >= 3), 3_000);
    await until('schedule in the status', async () => (await cli.hget(k.stats('rare'), 'schedule')) === '150ms');
    assert.equal(await cli.hget(k.stats('rare'), 'intervalMs'), '150');
    const status = await nodes[0]?.layer.read();
    assert.deepEqual(status?.jobs.find((j) => j.id === 'rare')?.settings, { fixedRate: '150ms' });
  });

  it('a bad value marks the job invalidSchedule with its cause; fixing it clears that', async () => {
    await cli.hset(k.settings, 'rare.fixedRate', 'often');
    await until('invalid', () => nodes.every((n) => n.core.job('rare')?.state === 'invalidSchedule'), 2_000);
    await until('cause in Redis', async () => ((await cli.hget(k.stats('rare'), 'invalidCause')) ?? '').includes('often'));
    await until('status shows it', async () => {
      const j = (await nodes[1]?.layer.api.job('rare'));
      return j?.state === 'invalidSchedule' && /often/.test(j.invalidCause ?? '');
    });
    assert.equal(nodes[0]?.core.job('beat')?.state, 'ok', 'other jobs are untouched');
    await cli.hset(k.settings, 'beat.paused', 'maybe');
    await sleep(700);
    assert.equal(nodes[0]?.core.job('beat')?.state, 'ok', 'a bad paused value is ignored');
    for (const n of nodes) assert.equal(n.warnings.filter((w) => w.includes('beat.paused is "maybe"')).length, 1, 'warned once');
    await cli.hdel(k.settings, 'rare.fixedRate', 'beat.paused');
    await until('valid again', () => nodes.every((n) => n.core.job('rare')?.state === 'ok'), 2_000);
    await until('cause cleared', async () => (await cli.hget(k.stats('rare'), 'invalidCause')) === '');
  });

  it('run now of an instance job reaches every node', async () => {
    await cli.hset(k.settings, 'rare.fixedRate', '1h');
    await sleep(700);
    const before = nodes.map((n) => n.started.filter((e) => e.jobId === 'rare' && e.manual).length);
    const res = await nodes[0]?.layer.api.run('rare');
    assert.equal(res?.statusCode, 202);
    assert.equal(res?.body['notified'], 2);
    await until('ran on both', () => nodes.every((n, i) => n.started.filter((e) => e.jobId === 'rare' && e.manual).length === (before[i] ?? 0) + 1), 2_000);
  });
});

/**
 * How a node hears of an operator's HSET: Redis tells it (client-side caching), so it reads
 * the settings hash once per change and every few seconds as a safety net, not every 500 ms;
 * after Redis restarts it asks again. Where the ACL refuses tracking, it polls, and a pause
 * still takes effect within a second.
 */
describe('settings tracking', () => {
  let server: TestRedis;
  let admin: Redis;
  const PFX = 'tracking-test';
  const tk = keyNames(PFX);
  const open: Array<{ core: Scheduler; layer: StatusLayer }> = [];

  /** A node with one job beating every 100 ms; `url` may name an ACL user. */
  async function node(id: string, url: string, log = memoryLogger()): Promise<TestNode> {
    const layer = createNode({ instanceId: id, logger: log.logger, shutdownGraceMs: 200, redis: { url }, prefix: PFX });
    const core = layer.core;
    core.add({ id: 'beat', fixedRate: '100ms', run: () => undefined });
    const started: RunStartedEvent[] = [];
    core.on('runStarted', (e) => started.push(e));
    await layer.start();
    core.start();
    open.push({ core, layer });
    return { core, layer, started, warnings: [] };
  }

  /**
   * How many times the settings hash is read during `ms`, seen through MONITOR on a socket of
   * its own (ioredis's monitor mode can fail on a line that arrives with its OK).
   */
  async function settingsReads(ms: number): Promise<number> {
    const socket = connect(server.port, '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write('MONITOR\r\n');
    await until('monitoring', () => text.startsWith('+OK'), 3_000);
    await sleep(ms);
    socket.destroy();
    const wanted = `"hgetall" "${tk.settings}"`;
    return text.split('\r\n').filter((line) => line.toLowerCase().includes(wanted.toLowerCase())).length;
  }

  /** Pauses `beat` with HSET as an operator would; resolves with how long the node took. */
  async function pauseTakes(n: TestNode): Promise<number> {
    const t0 = Date.now();
    await admin.hset(tk.settings, 'beat.paused', 'true');
    await until('paused', () => n.core.job('beat')?.state === 'paused', 3_000);
    const took = Date.now() - t0;
    await admin.hdel(tk.settings, 'beat.paused');
    await until('resumed', () => n.core.job('beat')?.state === 'ok', 3_000);
    return took;
  }

  before(async () => {
    server = await startRedis();
    admin = server.client();
    admin.on('error', () => undefined);
  });
  afterEach(async () => {
    for (const n of open.splice(0)) {
      await n.core.stop();
      await n.layer.stop();
    }
  });
  after(async () => {
    await server.stop();
  });

  it('the node reads the hash once per change, not on a 500 ms poll, and a pause still applies at once; again after Redis restarts', async () => {
    const n = await node('t-1', server.url);
    await sleep(300);
    // A 500 ms poll would read it 5 or 6 times in 2.5 s; the safety net reads at most once.
    assert.ok((await settingsReads(2_500)) <= 1, 'no 500 ms poll while Redis tracks the hash');
    assert.ok((await pauseTakes(n)) < 400, 'the HSET reached the node at once');

    await server.kill();
    await server.restart(); // empty: this server keeps nothing
    admin = server.client();
    admin.on('error', () => undefined);
    await until('the node is back', async () => {
      const list = await admin.client('LIST') as string;
      return /name=leasehold-sub .*flags=\S*t/.test(list);
    }, 10_000);
    await sleep(300);
    assert.ok((await settingsReads(2_500)) <= 1, 'tracking is asked for again after the restart');
    assert.ok((await pauseTakes(n)) < 400);
  });

  it('under an ACL without CLIENT TRACKING the node polls every 500 ms, says so once, and a pause applies within a second', async () => {
    await admin.call('ACL', 'SETUSER', 'polling', 'on', '>polling-secret', 'resetkeys', `~${PFX}:*`, 'resetchannels', `&${PFX}:*`, '+@all', '-client|id', '-client|tracking');
    const log = memoryLogger();
    const n = await node('t-2', `redis://polling:polling-secret@127.0.0.1:${String(server.port)}`, log);
    const reads = await settingsReads(2_500);
    assert.ok(reads >= 3, `the hash is polled (${String(reads)} reads in 2.5 s)`);
    assert.ok((await pauseTakes(n)) <= 1_000, 'a pause within a second');
    const said = log.lines.filter((l) => String(l['msg']).includes('reading the settings hash every 500 ms'));
    assert.equal(said.length, 1, log.text());
    assert.ok(!log.text().includes('polling-secret'), 'the password is not logged');
  });
});
