/**
 * [spread] Who claims an installation tick: rendezvous hashing over the live nodes that run
 * the same jobs. Every node computes the same order; the first claimers are spread evenly over
 * the nodes; and the claim decides each tick once whatever the nodes believe, so a stale or
 * wrong view costs a hand-off delay or an extra claim, never a run twice.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { RunStartedEvent } from '../src/index.js';
import { keys as keyNames } from '../src/redis/keys.js';
import { Scheduler } from '../src/runner/runner.js';
import type { ClaimOrder } from '../src/runner/order.js';
import { rendezvousOrder } from '../src/status/spread.js';
import { createNode, type StatusNode } from '../src/create/index.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

describe('the rendezvous order', () => {
  it('every node agrees: each tick has exactly one first and one second claimer, and the first claims spread evenly', () => {
    for (const n of [2, 3, 9, 27]) {
      const nodes = Array.from({ length: n }, (_, i) => `node-${i}`);
      const orders = nodes.map((self) => rendezvousOrder(self, () => nodes));
      const firsts = new Map<string, number>(nodes.map((id) => [id, 0]));
      const ticks = 2_000;
      for (let t = 0; t < ticks; t++) {
        const job = `job-${t % 100}`;
        const tick = 1_796_000_000_000 + Math.floor(t / 100) * 1_000;
        const places = orders.map((o) => o.place(job, tick));
        assert.equal(places.filter((p) => p === 0).length, 1, `one first claimer for ${job} at ${tick} among ${n}`);
        assert.equal(places.filter((p) => p === 1).length, 1, `one backup for ${job} at ${tick} among ${n}`);
        const first = nodes[places.indexOf(0)] as string;
        firsts.set(first, (firsts.get(first) ?? 0) + 1);
      }
      for (const [id, count] of firsts) {
        const share = count / ticks;
        assert.ok(Math.abs(share - 1 / n) <= 0.25 / n, `${id} is first for ${(share * 100).toFixed(1)}% of ${n} nodes' ticks`);
      }
    }
  });

  it('a node alone is always first; a fixedDelay job keeps its order from tick to tick', () => {
    assert.equal(rendezvousOrder('a', () => ['a']).place('j', 5), 0);
    const nodes = ['a', 'b', 'c'];
    const o = rendezvousOrder('b', () => nodes);
    const first = o.place('delay-job', undefined);
    for (let i = 0; i < 10; i++) assert.equal(o.place('delay-job', undefined), first);
  });
});

describe('a first claimer that lets its ticks pass', () => {
  it('is suspected by its backup from the first, for its own ticks only, until one read finds its tick claimed or it leaves the live nodes', () => {
    let nodes = ['me', 'x', 'y'];
    const o = rendezvousOrder('me', () => nodes);
    const all = (o: { place(job: string, tick: number): number }, first: string) =>
      Array.from({ length: 60 }, (_, i) => 1_796_000_000_000 + i * 1_000).filter((t) => o.place('j', t) === 1 && rendezvousOrder(first, () => nodes).place('j', t) === 0);
    const xFirst = all(o, 'x');
    const yFirst = all(o, 'y');
    assert.ok(xFirst.length >= 4 && yFirst.length >= 2, `this node is the backup of ${xFirst.length} ticks of x and ${yFirst.length} of y`);
    const suspected = (ticks: number[]) => ticks.map((t) => o.handoffFor?.('j', t) === 0);
    const [x0, x1, x2, x3] = xFirst as [number, number, number, number];
    const [y0] = yFirst as [number];
    const answer = (tick: number, claimed: boolean) => o.backupAnswered?.('j', tick, claimed);
    assert.deepEqual(suspected(xFirst), xFirst.map(() => false));
    assert.equal(answer(x0, true), 'x', 'a tick let pass: x is suspected from now on');
    assert.deepEqual(suspected(xFirst), xFirst.map(() => true));
    assert.equal(answer(x1, true), undefined, 'suspected already');
    assert.deepEqual(suspected(yFirst), yFirst.map(() => false), "y's ticks keep their hand-off");
    assert.equal(answer(y0, false), undefined);
    assert.deepEqual(suspected(xFirst), xFirst.map(() => true), "y's tick found claimed says nothing of x");
    // Another job of the same tick that x had claimed before it stopped (as a killed node may).
    const other = Array.from({ length: 50 }, (_, i) => `k${i}`).find((k) => o.place(k, x1) === 1 && rendezvousOrder('x', () => nodes).place(k, x1) === 0) as string;
    assert.equal(o.backupAnswered?.(other, x1, false), undefined);
    assert.equal(o.handoffFor?.('j', x2), 0, 'a tick of x due no later than the last it let pass, found claimed, says nothing of now');
    assert.equal(answer(x2, false), undefined);
    assert.deepEqual(suspected(xFirst), xFirst.map(() => false), 'a later tick of x found claimed: x claims again');
    assert.equal(answer(x3, true), 'x');
    nodes = ['me', 'y'];
    assert.ok(Array.from({ length: 60 }, (_, i) => 1_796_000_000_000 + i * 1_000).every((t) => o.handoffFor?.('j', t) === 100), 'x is gone: y ranks first where x did, unsuspected');
  });
});

describe('two nodes ranked ahead that let their ticks pass', () => {
  it('the node ranked third is the backup, after it, of the one ahead it does not suspect, and claims on the tick once it suspects both; fixedDelay jobs keep their order', () => {
    const nodes = ['me', 'x', 'y'];
    const o = rendezvousOrder('me', () => nodes);
    const plain = rendezvousOrder('me', () => nodes); // suspects no one: the ranking itself
    const ticks = Array.from({ length: 200 }, (_, i) => 1_796_000_000_000 + i * 1_000);
    const firstIs = (node: string, t: number) => rendezvousOrder(node, () => nodes).place('j', t) === 0;
    const backupOf = (node: string) => ticks.filter((t) => plain.place('j', t) === 1 && firstIs(node, t));
    const third = ticks.filter((t) => plain.place('j', t) === 2);
    const xThenY = third.filter((t) => firstIs('x', t));
    assert.ok(xThenY.length >= 4 && third.length - xThenY.length >= 4, `${xThenY.length} ticks ranked x, y, then this node; ${third.length - xThenY.length} ranked y, x`);
    const [xFirst, yFirst] = [backupOf('x')[0], backupOf('y')[0]] as [number, number];
    // A tick ranked third, due after a tick this node is the backup of x for: won, it says x let it pass too.
    const won = third.find((t) => t > yFirst && backupOf('x').some((b) => b > xFirst && b < t));
    const between = backupOf('x').find((b) => b > xFirst && won !== undefined && b < won);
    assert.ok(won !== undefined && between !== undefined);
    const places = () => third.map((t) => o.place('j', t));
    const onTick = () => third.map((t) => o.handoffFor?.('j', t) === 0);
    const delayPlace = o.place('delay', undefined);

    assert.equal(o.backupAnswered?.('j', xFirst, true), 'x');
    assert.deepEqual(places(), third.map(() => 1), 'x suspected: this node is the backup of y where it ranked third');
    assert.deepEqual(third.map((t) => o.handoffFor?.('j', t)), third.map(() => 200), 'y is not suspected: two hand-off delays late, after y, which learns from its own claim');
    assert.equal(o.backupAnswered?.('j', won, true), undefined, 'a tick won as the backup of y suspects no one new');
    assert.deepEqual(onTick(), third.map(() => false));
    assert.equal(o.backupAnswered?.('j', between, false), undefined);
    assert.deepEqual(places(), third.map(() => 1), 'x let the tick won pass too: one of its ticks due before it, found claimed, says nothing of now');
    assert.equal(o.backupAnswered?.('j', yFirst, true), 'y');
    assert.deepEqual(onTick(), third.map(() => true), 'both suspected: on the tick');
    const foundClaimed = third.find((t) => t > won) as number;
    assert.equal(o.backupAnswered?.('j', foundClaimed, false), undefined);
    assert.deepEqual(onTick(), third.map(() => true), 'a tick ranked third found claimed says nothing of which node claimed it');
    assert.equal(o.place('delay', undefined), delayPlace, 'a fixedDelay job has no tick to let pass: its order stays');
    const later = backupOf('x').find((t) => t > foundClaimed) as number;
    assert.equal(o.backupAnswered?.('j', later, false), undefined);
    assert.deepEqual(third.map((t) => o.handoffFor?.('j', t)), third.map(() => 200), 'x claims again: two hand-off delays late, behind x and y');
    assert.deepEqual(places(), third.map(() => 1), 'y is still suspected: this node stays the backup of x where y ranked ahead of it');
  });

  it('forgets a suspect that leaves the live nodes, and ranks behind it again if it comes back', () => {
    let nodes = ['me', 'x', 'y'];
    const o = rendezvousOrder('me', () => nodes);
    const ticks = Array.from({ length: 100 }, (_, i) => 1_796_000_000_000 + i * 1_000);
    const xFirst = ticks.find((t) => o.place('j', t) === 1 && rendezvousOrder('x', () => nodes).place('j', t) === 0) as number;
    const third = () => ticks.filter((t) => rendezvousOrder('me', () => nodes).place('j', t) === 2);
    assert.equal(o.backupAnswered?.('j', xFirst, true), 'x');
    assert.ok(third().some((t) => o.place('j', t) === 1));
    nodes = ['me', 'y'];
    o.place('j', xFirst);
    nodes = ['me', 'x', 'y'];
    assert.deepEqual(third().map((t) => o.place('j', t)), third().map(() => 2), 'x back under its id: no longer suspected');
  });
});

describe('nodes that see the live nodes differently', () => {
  let server: TestRedis;
  let cli: Redis;
  before(async () => {
    server = await startRedis();
    cli = server.client();
  });
  after(async () => {
    await server.stop();
  });

  /** Two in-process nodes whose claim order is given, over a real Redis. */
  async function pair(prefix: string, orders: [ClaimOrder, ClaimOrder]): Promise<{ started: RunStartedEvent[]; stop(): Promise<void> }> {
    const { logger } = memoryLogger();
    const started: RunStartedEvent[] = [];
    const nodes: Array<{ core: Scheduler; layer: StatusNode }> = [];
    for (const [i, id] of ['a', 'b'].entries()) {
      const layer = createNode({ instanceId: id, logger, shutdownGraceMs: 200, redis: { url: server.url }, prefix, coordinator: 'redis', claimOrder: orders[i] as ClaimOrder });
      const core = layer.core;
      core.add({ id: 'every-second', scope: 'installation', cron: '* * * * * *', run: () => undefined });
      core.on('runStarted', (e) => started.push(e));
      await layer.start();
      core.start();
      nodes.push({ core, layer });
    }
    return {
      started,
      async stop() {
        for (const n of nodes) {
          await n.core.stop();
          await n.layer.stop();
        }
      },
    };
  }

  const check = (started: RunStartedEvent[], from: number, to: number, lateBy: number): void => {
    const ticks = started.filter((e) => e.scheduledAt >= from && e.scheduledAt <= to).map((e) => e.scheduledAt);
    assert.equal(new Set(ticks).size, ticks.length, 'no tick ran twice');
    for (let t = Math.ceil(from / 1000) * 1000; t <= to; t += 1000) assert.ok(ticks.includes(t), `tick ${new Date(t).toISOString()} ran`);
    for (const e of started) assert.ok(e.lagMs < lateBy, `started ${e.lagMs} ms late`);
  };

  it('both believe they are first: every tick runs once (an extra claim, no duplicate)', async () => {
    const p = await pair('both-first', [{ place: () => 0, handoffMs: 100 }, { place: () => 0, handoffMs: 100 }]);
    const from = Date.now() + 1_500;
    await sleep(6_000);
    await p.stop();
    check(p.started, from, from + 3_500, 400);
  });

  it('both believe they are second (the first they see is dead or another): every tick runs once, a hand-off delay late', async () => {
    const p = await pair('both-second', [{ place: () => 1, handoffMs: 100 }, { place: () => 1, handoffMs: 100 }]);
    const from = Date.now() + 1_500;
    await sleep(6_000);
    await p.stop();
    check(p.started, from, from + 3_500, 500);
    assert.ok(p.started.every((e) => e.lagMs >= 90), 'the backup waits its hand-off delay');
  });

  it('the ones not ranked do not claim: a tick costs its first claimer\'s claim, and no skip is counted', async () => {
    const p = await pair('ranked', [{ place: () => 0, handoffMs: 100 }, { place: () => 2, handoffMs: 100 }]);
    await sleep(4_000);
    await p.stop();
    assert.ok(p.started.length >= 3);
    assert.ok(p.started.every((e) => e.instanceId === 'a'));
    assert.equal(await cli.hget(keyNames('ranked').stats('every-second'), 'skippedClaimed'), '0');
  });
});
