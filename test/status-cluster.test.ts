/**
 * Two nodes against one redis-server (SPEC 5): jobs that succeed, fail, run per instance
 * and once per installation; the counters in Redis equal the runs and skips that happened,
 * exactly, and both nodes answer the same.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { keys as keyNames } from '../src/redis/keys.js';
import type { RunEndedEvent, SkippedEvent } from '../src/runner/events.js';
import { Scheduler } from '../src/runner/runner.js';
import { createNode, type StatusNode as StatusLayer } from '../src/create/index.js';
import type { ClusterStatus } from '../src/status/model.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const PREFIX = 'cluster-status-test';

const JOBS = [
  { id: 'everywhere', fixedRate: '200ms', run: () => sleep(5) },
  { id: 'grumpy', fixedRate: '300ms', run: () => Promise.reject(new Error('nope')) },
  { id: 'once', scope: 'installation', fixedRate: '250ms', lease: '2s', run: () => sleep(20) },
  { id: 'once-failing', scope: 'installation', cron: '* * * * * *', lease: '2s', run: () => Promise.reject(new Error('down')) },
  { id: 'slow', fixedRate: '100ms', run: () => sleep(250) },
];

interface TestNode {
  core: Scheduler;
  layer: StatusLayer;
  ended: RunEndedEvent[];
  skipped: SkippedEvent[];
}

describe('two nodes', () => {
  let server: TestRedis;
  const nodes: TestNode[] = [];
  const log = memoryLogger();

  before(async () => {
    server = await startRedis();
    for (const id of ['node-a', 'node-b']) {
      // node-b ranks itself first for every tick, as a node whose view of the live nodes is
      // stale would: the ticks node-a ranks first too are claimed by both, and the one that
      // loses counts a claimed skip (with one view, the second node only backs the first up).
      const order = id === 'node-b' ? { claimOrder: { place: () => 0, handoffMs: 100 } } : {};
      const layer = createNode({ instanceId: id, logger: log.logger, shutdownGraceMs: 2_000, redis: { url: server.url }, prefix: PREFIX, coordinator: 'redis', ...order });
      const core = layer.core;
      for (const j of JOBS) core.add(j);
      const ended: RunEndedEvent[] = [];
      const skipped: SkippedEvent[] = [];
      core.on('runEnded', (e) => ended.push(e));
      core.on('skipped', (e) => skipped.push(e));
      await layer.start();
      nodes.push({ core, layer, ended, skipped });
    }
    for (const n of nodes) n.core.start();
  });
  after(async () => {
    for (const n of nodes) await n.layer.stop();
    await server.stop();
  });

  it('counters equal what happened, exactly, and both nodes answer the same', async () => {
    await sleep(3_000);
    for (const n of nodes) await n.core.stop();
    for (const n of nodes) assert.equal(await n.layer.flush(), true);
    await sleep(1_100); // older than any cached snapshot

    const admin = server.client();
    const k = keyNames(PREFIX);
    for (const { id } of JOBS) {
      const ended = nodes.flatMap((n) => n.ended.filter((e) => e.jobId === id));
      const skipped = nodes.flatMap((n) => n.skipped.filter((e) => e.jobId === id));
      const stats = await admin.hgetall(k.stats(id));
      const count = (pred: (e: RunEndedEvent) => boolean) => String(ended.filter(pred).length);
      assert.equal(stats['runs'], String(ended.length), `${id}.runs`);
      for (const outcome of ['succeeded', 'failed', 'timedOut', 'lockLost', 'interrupted']) {
        assert.equal(stats[outcome], count((e) => e.outcome === outcome), `${id}.${outcome}`);
      }
      assert.equal(stats['skipped'], String(skipped.length), `${id}.skipped`);
      assert.equal(stats['overruns'], String(skipped.filter((s) => s.reason === 'overrun').length), `${id}.overruns`);
      assert.equal(stats['skippedClaimed'], String(skipped.filter((s) => s.reason === 'claimed').length), `${id}.skippedClaimed`);
      assert.ok(ended.length > 0, `${id} ran`);
      if (id !== 'once' && id !== 'once-failing') {
        const rows = await admin.hgetall(k.instanceStats(id));
        for (const n of nodes) {
          assert.equal(rows[`${n.core.instanceId}.runs`], String(n.ended.filter((e) => e.jobId === id).length), `${id} on ${n.core.instanceId}`);
        }
      }
    }
    const once = nodes.flatMap((n) => n.ended.filter((e) => e.jobId === 'once'));
    assert.equal(new Set(once.map((e) => e.scheduledAt)).size, once.length, 'installation ticks ran once');
    assert.ok(nodes.flatMap((n) => n.skipped).some((s) => s.reason === 'claimed'), 'the other node skipped claimed ticks');
    assert.ok(nodes.flatMap((n) => n.skipped).some((s) => s.reason === 'overrun'), 'the slow job overran');

    const [a, b] = await Promise.all(nodes.map((n) => n.layer.api.clusterJson()));
    // Each answer is as of its own read: the time and the ages its reasons give ("for 4.4s") may differ.
    const strip = (json: Buffer | undefined) => {
      const status = JSON.parse(json?.toString() ?? '{}') as ClusterStatus;
      return { ...status, generatedAt: '', jobs: status.jobs.map((j) => ({ ...j, degradedReasons: j.degradedReasons.map((r) => r.replace(/ for [^:,]+([:,])/, ' for some time$1')) })) };
    };
    const viewA = strip(a);
    assert.deepEqual(viewA, strip(b), 'both nodes answer the same');
    assert.deepEqual(viewA.instances.map((i) => i.id), ['node-a', 'node-b']);
    const grumpy = viewA.jobs.find((j) => j.id === 'grumpy');
    assert.equal(grumpy?.state, 'degraded');
    assert.deepEqual(grumpy?.instances.map((r) => r.instanceId), ['node-a', 'node-b']);
    assert.equal(viewA.jobs.find((j) => j.id === 'once-failing')?.state, 'degraded');
    assert.equal(viewA.jobs.find((j) => j.id === 'everywhere')?.state, 'ok');
  });
});
