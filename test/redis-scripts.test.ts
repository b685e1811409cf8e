import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { isLeaseholdError } from '../src/errors.js';
import { encodeClaimArgs } from '../src/redis/claim.js';
import { claimScript, extendScript, releaseScript } from '../src/redis/scripts.js';
import { commandsRun, startRedis, type TestRedis } from './helpers/redis.js';

/** The answer of a call for one job: its reply, or its error thrown. */
async function answer<T>(call: Promise<Array<T | Error>>): Promise<T> {
  const [a] = await call;
  if (a === undefined || a instanceof Error) throw a ?? new Error('no answer');
  return a;
}

describe('lua scripts', () => {
  let server: TestRedis;
  let redis: Redis;
  let n = 0;
  const fresh = (): { leaseKey: string; stateKey: string; statsKey: string; countSkip: boolean } => {
    n += 1;
    return { leaseKey: `scripts-test:{j${n}}:lease`, stateKey: `scripts-test:{j${n}}:state`, statsKey: `scripts-test:{j${n}}:stats`, countSkip: false };
  };
  before(async () => {
    server = await startRedis();
    redis = server.client();
  });
  after(async () => {
    await server.stop();
  });

  it('writes lease values an operator can read, with exact ISO times', async () => {
    const ticks = [
      0, 951_782_400_000, 951_868_799_999, 1_078_099_200_123, 1_709_164_800_000,
      1_735_689_599_999, 4_102_444_800_000, 253_402_300_799_999,
    ];
    for (let i = 0; i < 200; i++) ticks.push(Math.floor(Math.random() * 4_102_444_800_000));
    for (const tick of ticks) {
      const k = fresh();
      const reply = await answer(claimScript(redis, [{ ...k, tick, leaseMs: 1000, holder: 'host-7', mode: 'grid', nowGuardMs: 1e15 }]));
      assert.equal(reply.kind, 'claimed');
      if (reply.kind !== 'claimed') continue;
      const since = new Date(reply.serverNowMs).toISOString();
      assert.equal(reply.lease, `host-7 since ${since} tick ${new Date(tick).toISOString()} token 1`);
      assert.equal(await redis.get(k.leaseKey), reply.lease);
      assert.equal(await redis.hget(k.stateKey, 'tick'), String(tick));
    }
  });

  it('uses Redis server time', async () => {
    const k = fresh();
    const [s, us] = await redis.time();
    const serverMs = Number(s) * 1000 + Math.floor(Number(us) / 1000);
    const reply = await answer(claimScript(redis, [{ ...k, tick: serverMs + 60_000, leaseMs: 1000, holder: 'h', mode: 'grid', nowGuardMs: 0 }]));
    assert.equal(reply.kind, 'early');
    if (reply.kind === 'early') assert.ok(Math.abs(reply.serverNowMs - serverMs) < 1000);
  });

  it('checks arguments before sending them', async () => {
    const k = fresh();
    const base = { ...k, tick: 1, leaseMs: 1000, holder: 'h', mode: 'grid' as const, nowGuardMs: 0 };
    for (const bad of [{ tick: 1.5 }, { tick: -1 }, { leaseMs: 0 }, { leaseMs: Number.NaN }, { nowGuardMs: -1 }]) {
      await assert.rejects(answer(claimScript(redis, [{ ...base, ...bad }])), (err) => isLeaseholdError(err, 'invalidConfig'));
    }
    await assert.rejects(extendScript(redis, { leaseKey: k.leaseKey, value: 'v', leaseMs: 0 }), (err) => isLeaseholdError(err, 'invalidConfig'));
    await assert.rejects(answer(releaseScript(redis, [{ ...k, value: 'v', delayMs: -2 }])), (err) => isLeaseholdError(err, 'invalidConfig'));
  });

  it('answers a malformed job argument with that job\'s error and still decides the others', async () => {
    const lua = readFileSync(new URL('../src/redis/scripts/claim.lua', import.meta.url), 'utf8');
    const [a, b] = [fresh(), fresh()];
    const good = '{"tick":1000,"leaseMs":5000,"mode":"grid","nowGuardMs":0,"countSkip":false,"holder":"host 7"}';
    assert.equal(encodeClaimArgs({ holder: 'host 7', countSkip: false, nowGuardMs: 0, mode: 'grid', leaseMs: 5000, tick: 1000 }), good);
    const reply = (await redis.eval(lua, 6, a.leaseKey, a.stateKey, a.statsKey, b.leaseKey, b.stateKey, b.statsKey, '1000 5000 grid', good)) as unknown[];
    assert.deepEqual(reply[0], ['error', 'leasehold claim: a job\'s argument must be a JSON object with tick, leaseMs, mode, nowGuardMs, countSkip, holder and optionally request']);
    assert.equal((reply[1] as unknown[])[0], 'claimed');
    assert.match(String(await redis.get(b.leaseKey)), /^host 7 since /, 'the holder is any text');
    await assert.rejects(redis.eval(lua, 3, a.leaseKey, a.stateKey, a.statsKey), /expected 3 keys and 1 argument per job/);
  });

  it('answers every per-job error in one form, {\'error\', message}', async () => {
    const release = readFileSync(new URL('../src/redis/scripts/release.lua', import.meta.url), 'utf8');
    const k = fresh();
    assert.deepEqual(await redis.eval(release, 2, k.leaseKey, k.stateKey, 'v', 'soon', ''), [['error', 'leasehold release: delayMs must be an integer']]);
    const record = readFileSync(new URL('../src/redis/scripts/record.lua', import.meta.url), 'utf8');
    const r = await redis.eval(record, 4, 's-test:{r}:stats', 's-test:{r}:instances', 's-test:{r}:runs', 's-test:{r}:batches', '5', '60000', 'w', '0', '{}');
    assert.deepEqual(r, [['error', 'leasehold record: seq must be a positive integer']]);
  });

  it('hands a claimed tick back on release: the tick claimed before is the last one again, and the tick can be claimed anew', async () => {
    const k = fresh();
    const base = { ...k, leaseMs: 10_000, mode: 'grid' as const, nowGuardMs: 1e15 };
    const first = await answer(claimScript(redis, [{ ...base, tick: 1_000, holder: 'a' }]));
    assert.equal(first.kind, 'claimed');
    assert.equal(await answer(releaseScript(redis, [{ ...k, value: first.kind === 'claimed' ? first.lease : '', delayMs: -1 }])), true);
    const second = await answer(claimScript(redis, [{ ...base, tick: 2_000, holder: 'a' }]));
    assert.equal(second.kind, 'claimed');
    if (second.kind !== 'claimed') return;
    assert.equal(second.previousTick, 1_000);
    // The node stops before the run of tick 2000 begins: it hands the tick back.
    assert.equal(await answer(releaseScript(redis, [{ ...k, value: second.lease, delayMs: -1, handBackTo: 1_000 }])), true);
    assert.equal(await redis.hget(k.stateKey, 'tick'), '1000');
    const again = await answer(claimScript(redis, [{ ...base, tick: 2_000, holder: 'b' }]));
    assert.equal(again.kind, 'claimed', 'another node claims the handed-back tick');
    if (again.kind === 'claimed') assert.equal(again.previousTick, 1_000);
    // With no tick claimed before, the field goes.
    const k2 = fresh();
    const only = await answer(claimScript(redis, [{ ...k2, leaseMs: 10_000, mode: 'grid', nowGuardMs: 1e15, tick: 5_000, holder: 'a' }]));
    assert.equal(await answer(releaseScript(redis, [{ ...k2, value: only.kind === 'claimed' ? only.lease : '', delayMs: -1, handBackTo: null }])), true);
    assert.equal(await redis.hget(k2.stateKey, 'tick'), null);
    // A release of a lease that is not ours hands nothing back.
    assert.equal(await answer(releaseScript(redis, [{ ...k, value: 'someone else', delayMs: -1, handBackTo: null }])), false);
    assert.equal(await redis.hget(k.stateKey, 'tick'), '2000');
  });

  it('refuses a bad mode inside the script too', async () => {
    const k = fresh();
    const mode = 'sometimes' as unknown as 'grid';
    await assert.rejects(answer(claimScript(redis, [{ ...k, tick: 1, leaseMs: 1000, holder: 'h', mode, nowGuardMs: 0 }])), /mode must be grid, delay, manual or pause/);
  });

  it('registers the scripts once per connection and survives a script flush', async () => {
    const k = fresh();
    const first = await answer(claimScript(redis, [{ ...k, tick: 1, leaseMs: 1000, holder: 'h', mode: 'grid', nowGuardMs: 0 }]));
    assert.equal(first.kind, 'claimed');
    await redis.script('FLUSH');
    assert.equal(await extendScript(redis, { leaseKey: k.leaseKey, value: first.kind === 'claimed' ? first.lease : '', leaseMs: 1000 }), true);
  });
  it('counts a claim that finds its tick taken as a claimed skip in the stats hash, only when asked', async () => {
    const k = fresh();
    await answer(claimScript(redis, [{ ...k, tick: 1000, leaseMs: 1000, holder: 'a', mode: 'grid', nowGuardMs: 0 }]));
    const done = await answer(claimScript(redis, [{ ...k, countSkip: true, tick: 1000, leaseMs: 1000, holder: 'b', mode: 'grid', nowGuardMs: 0 }]));
    assert.equal(done.kind, 'done');
    await answer(claimScript(redis, [{ ...k, countSkip: false, tick: 1000, leaseMs: 1000, holder: 'c', mode: 'grid', nowGuardMs: 0 }]));
    assert.deepEqual(await redis.hgetall(k.statsKey), { skipped: '1', skippedClaimed: '1' });
  });
  it('wins a claim in four commands (TIME, HMGET, SET NX, HSET), and the next token follows the stored counter', async () => {
    const k = fresh();
    await redis.hset(k.stateKey, 'fence', '41');
    await redis.config('RESETSTAT');
    const won = await answer(claimScript(redis, [{ ...k, tick: 1000, leaseMs: 1000, holder: 'a', mode: 'grid', nowGuardMs: 0 }]));
    assert.equal(won.kind === 'claimed' && won.token, 42);
    assert.deepEqual(await commandsRun(redis), { hmget: 1, hset: 1, set: 1, time: 1 });
    // The lease held: the next tick is answered with the holder and the time left, nothing written.
    const held = await answer(claimScript(redis, [{ ...k, tick: 2000, leaseMs: 1000, holder: 'b', mode: 'grid', nowGuardMs: 0 }]));
    assert.equal(held.kind, 'held');
    assert.equal(await redis.hget(k.stateKey, 'fence'), '42');
  });

  it('refuses a claim while the fencing counter holds no integer, so tokens never go back', async () => {
    const k = fresh();
    await redis.hset(k.stateKey, 'fence', 'lots');
    await assert.rejects(answer(claimScript(redis, [{ ...k, tick: 1000, leaseMs: 1000, holder: 'a', mode: 'grid', nowGuardMs: 0 }])), /fencing counter/);
    assert.equal(await redis.exists(k.leaseKey), 0);
  });
});
