import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { createLeaseStore, type LeaseStore } from '../src/lease/lease.js';
import { createRedis, whenReady } from '../src/redis/connection.js';
import { keys } from '../src/redis/keys.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const CONNECTIONS = 16;

describe('lease claims under contention', () => {
  let server: TestRedis;
  const connections: Redis[] = [];
  let serverNow: () => Promise<number>;

  before(async () => {
    server = await startRedis();
    for (let i = 0; i < CONNECTIONS; i++) {
      const redis = createRedis({ url: server.url, role: 'lease' });
      connections.push(redis);
    }
    await Promise.all(connections.map((r) => whenReady(r, 5000)));
    const raw = server.client();
    serverNow = async () => {
      const [s] = await raw.time();
      return Number(s) * 1000;
    };
  });
  after(async () => {
    for (const r of connections) r.disconnect();
    await server.stop();
  });

  const storesFor = (prefix: string): LeaseStore[] => connections.map((r) => createLeaseStore(r, keys(prefix)));

  it('gives each tick to exactly one of many simultaneous claimants', async () => {
    const stores = storesFor(`lh-hammer-${randomUUID()}`);
    const base = (await serverNow()) - 600_000;
    const tokens: number[] = [];
    for (let round = 0; round < 40; round++) {
      const tick = base + round * 1000;
      const results = await Promise.all(stores.map((store, i) =>
        store.claim({ jobId: 'hammered', tick, leaseMs: 5000, holder: `node-${i}`, mode: 'grid' })));
      const winners = results.filter((r) => r.kind === 'claimed');
      assert.equal(winners.length, 1, `round ${round}: ${results.map((r) => r.kind).join(',')}`);
      for (const r of results) assert.ok(r.kind === 'claimed' || r.kind === 'done', r.kind);
      const [winner] = winners;
      if (winner?.kind !== 'claimed') continue;
      tokens.push(winner.token);
      assert.equal(await winner.lease.release(), true);
    }
    assert.deepEqual(tokens, Array.from({ length: 40 }, (_, i) => i + 1));
  });

  it('claims every tick exactly once when claimants race through the timetable', async () => {
    const stores = storesFor(`lh-race-${randomUUID()}`);
    const base = (await serverNow()) - 600_000;
    const ticks = Array.from({ length: 60 }, (_, i) => base + i * 1000);
    const claims = new Map<number, { holder: string; token: number }[]>();
    await Promise.all(stores.map(async (store, i) => {
      for (const tick of ticks) {
        for (;;) {
          const result = await store.claim({ jobId: 'raced', tick, leaseMs: 5000, holder: `node-${i}`, mode: 'grid' });
          if (result.kind === 'claimed') {
            const list = claims.get(tick) ?? [];
            list.push({ holder: `node-${i}`, token: result.token });
            claims.set(tick, list);
            // Hold the lease briefly, as a short job would.
            await new Promise((resolve) => setImmediate(resolve));
            assert.equal(await result.lease.release(), true);
            break;
          }
          if (result.kind === 'done') break;
          assert.equal(result.kind, 'held');
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    }));
    let lastToken = 0;
    for (const tick of ticks) {
      const list = claims.get(tick) ?? [];
      assert.equal(list.length, 1, `tick ${tick} claimed ${list.length} times`);
      const [only] = list;
      assert.ok(only !== undefined && only.token > lastToken, 'tokens grow with the ticks');
      lastToken = only.token;
    }
    assert.equal(lastToken, ticks.length);
  });
});
