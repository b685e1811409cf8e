import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { isLeaseholdError } from '../src/errors.js';
import { encodeClaimArgs } from '../src/redis/claim.js';
import { claimScript, extendScript, releaseScript } from '../src/redis/lease-scripts.js';
import { recordScript } from '../src/redis/stats-scripts.js';
import { setTimeout as sleep } from 'node:timers/promises';
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
  const fresh = (): { leaseKey: string; stateKey: string; statsKey: string; runsKey: string; countSkip: boolean; runsCap: number } => {
    n += 1;
    return { leaseKey: `scripts-test:{j${n}}:lease`, stateKey: `scripts-test:{j${n}}:state`, statsKey: `scripts-test:{j${n}}:stats`, runsKey: `scripts-test:{j${n}}:runs`, countSkip: false, runsCap: 5 };
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
    const good = '{"tick":1000,"leaseMs":5000,"mode":"grid","nowGuardMs":0,"countSkip":false,"holder":"host 7","runsCap":5}';
    assert.equal(encodeClaimArgs({ holder: 'host 7', countSkip: false, nowGuardMs: 0, mode: 'grid', leaseMs: 5000, tick: 1000, runsCap: 5 }), good);
    const reply = (await redis.eval(lua, 8, a.leaseKey, a.stateKey, a.statsKey, a.runsKey, b.leaseKey, b.stateKey, b.statsKey, b.runsKey, '1000 5000 grid', good)) as unknown[];
    assert.deepEqual(reply[0], ['error', 'leasehold claim: a job\'s argument must be a JSON object with tick, leaseMs, mode, nowGuardMs, countSkip, holder, runsCap and optionally request']);
    assert.equal((reply[1] as unknown[])[0], 'claimed');
    assert.match(String(await redis.get(b.leaseKey)), /^host 7 since /, 'the holder is any text');
    await assert.rejects(redis.eval(lua, 3, a.leaseKey, a.stateKey, a.statsKey), /expected 4 keys and 1 argument per job/);
  });

  it('answers every per-job error in one form, {\'error\', message}', async () => {
    const release = readFileSync(new URL('../src/redis/scripts/release.lua', import.meta.url), 'utf8');
    const k = fresh();
    assert.deepEqual(await redis.eval(release, 2, k.leaseKey, k.stateKey, 'v', 'soon', ''), [['error', 'leasehold release: delayMs must be an integer']]);
    const record = readFileSync(new URL('../src/redis/scripts/record.lua', import.meta.url), 'utf8');
    const r = await redis.eval(record, 6, 's-test:{r}:stats', 's-test:{r}:instances', 's-test:{r}:runs', 's-test:{r}:state', 's-test:{r}:writers', 's-test:{r}:lease', '5', '60000', 'w', '0', '{}');
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
    // The version tells the nodes that read the status that the stats moved.
    assert.deepEqual(await redis.hgetall(k.statsKey), { skipped: '1', skippedClaimed: '1', version: '1' });
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

  it('answers a key of the wrong type with that job\'s own corruptState, naming the key and the repair, touching nothing, and claims the others', async () => {
    const cases: Array<[keyof ReturnType<typeof fresh>, (key: string) => Promise<unknown>, 'grid' | 'pause']> = [
      ['stateKey', (key) => redis.set(key, 'garbage'), 'grid'],
      ['stateKey', (key) => redis.set(key, 'garbage'), 'pause'],
      ['leaseKey', (key) => redis.hset(key, 'x', '1'), 'grid'],
      ['statsKey', (key) => redis.set(key, 'garbage'), 'pause'],
    ];
    for (const [which, corrupt, mode] of cases) {
      const [bad, before, after] = [fresh(), fresh(), fresh()];
      const key = String(bad[which]);
      await corrupt(key);
      const base = { tick: 1000, leaseMs: 1000, holder: 'h', mode, nowGuardMs: 0 };
      const [b, a, c] = await claimScript(redis, [{ ...before, ...base }, { ...bad, ...base }, { ...after, ...base }]);
      assert.ok(isLeaseholdError(a, 'corruptState'), `${which} ${mode}: ${String(a instanceof Error ? a.message : JSON.stringify(a))}`);
      assert.ok(a.message.includes(key), a.message);
      assert.match(a.message, /DEL/);
      assert.match(a.message, /leasehold forget/);
      for (const other of [b, c]) assert.ok(!(other instanceof Error) && other?.kind === (mode === 'pause' ? 'paused' : 'claimed'), `${which} ${mode}: the other jobs are decided`);
      // Nothing of the damaged job was written.
      for (const k of ['leaseKey', 'stateKey', 'statsKey'] as const) {
        if (k !== which) assert.equal(await redis.exists(bad[k]), 0, `${which} ${mode}: ${k} untouched`);
      }
    }
  });

  it('counts no claimed skip in a stats hash of the wrong type: the tick is still answered done, uncounted', async () => {
    const k = fresh();
    await answer(claimScript(redis, [{ ...k, tick: 1000, leaseMs: 1000, holder: 'a', mode: 'grid', nowGuardMs: 0 }]));
    await redis.del(k.statsKey);
    await redis.set(k.statsKey, 'garbage');
    const done = await answer(claimScript(redis, [{ ...k, countSkip: true, tick: 1000, leaseMs: 1000, holder: 'b', mode: 'grid', nowGuardMs: 0 }]));
    assert.deepEqual(done, { kind: 'done', lastTick: 1000, counted: false });
    assert.equal(await redis.get(k.statsKey), 'garbage');
  });

  it('releases each job on its own: a claim state of the wrong type fails only its own release, before the lease is deleted', async () => {
    const [bad, good] = [fresh(), fresh()];
    const base = { tick: 1000, leaseMs: 10_000, holder: 'h', mode: 'delay' as const, nowGuardMs: 0 };
    const [x, y] = await claimScript(redis, [{ ...bad, ...base }, { ...good, ...base }]);
    if (!x || x instanceof Error || x.kind !== 'claimed' || !y || y instanceof Error || y.kind !== 'claimed') throw new Error('not claimed');
    await redis.del(bad.stateKey);
    await redis.set(bad.stateKey, 'garbage');
    const [rb, rg] = await releaseScript(redis, [{ ...bad, value: x.lease, delayMs: 500 }, { ...good, value: y.lease, delayMs: 500 }]);
    assert.ok(isLeaseholdError(rb, 'corruptState'), String(rb));
    assert.ok(rb.message.includes(bad.stateKey));
    assert.equal(rg, true);
    assert.equal(await redis.get(bad.leaseKey), x.lease, 'the damaged job\'s lease is left to expire');
    assert.ok(Number(await redis.hget(good.stateKey, 'due')) > 0);
  });

  it('refuses a claim while the fencing counter holds no integer, so tokens never go back', async () => {
    const k = fresh();
    await redis.hset(k.stateKey, 'fence', 'lots');
    await assert.rejects(answer(claimScript(redis, [{ ...k, tick: 1000, leaseMs: 1000, holder: 'a', mode: 'grid', nowGuardMs: 0 }])), /fencing counter/);
    assert.equal(await redis.exists(k.leaseKey), 0);
  });
  it('records a run whose lease expired unreleased once, as lost, in the claim that finds it; a released run never', async () => {
    const k = fresh();
    const base = { ...k, mode: 'grid' as const, nowGuardMs: 1e15 };
    const dead = await answer(claimScript(redis, [{ ...base, tick: 1_000, leaseMs: 30, holder: 'node-a' }]));
    assert.equal(dead.kind, 'claimed');
    await sleep(60); // node-a died: its lease runs out, nobody released or recorded its run
    await redis.config('RESETSTAT');
    const found = await answer(claimScript(redis, [{ ...base, tick: 2_000, leaseMs: 10_000, holder: 'node-b' }]));
    assert.equal(found.kind, 'claimed');
    if (found.kind !== 'claimed' || dead.kind !== 'claimed') return;
    // The lost run costs the claim four commands more: HMGET and HSET of the stats, LPUSH and LTRIM.
    assert.deepEqual(await commandsRun(redis), { hmget: 2, hset: 2, set: 1, time: 1, lpush: 1, ltrim: 1 });
    assert.deepEqual(found.lost, { token: 1, tick: 1_000, startedAt: dead.serverNowMs, foundAt: found.serverNowMs, holder: 'node-a', manual: false });
    const stats = await redis.hgetall(k.statsKey);
    assert.deepEqual([stats['runs'], stats['lost'], stats['streak'], stats['lastOutcome'], stats['lastInstance']], ['1', '1', '1', 'lost', 'node-a']);
    assert.equal(stats['lastStartedAt'], new Date(dead.serverNowMs).toISOString());
    const runs = (await redis.lrange(k.runsKey, 0, -1)).map((r) => JSON.parse(r) as Record<string, unknown>);
    assert.equal(runs.length, 1);
    assert.deepEqual({ ...runs[0], durationMs: 0, error: '' }, {
      outcome: 'lost', instance: 'node-a', scheduledAt: new Date(1_000).toISOString(), startedAt: new Date(dead.serverNowMs).toISOString(),
      durationMs: 0, error: '', fencingToken: 1, manual: false, attempt: 1,
    });
    assert.match(String(runs[0]?.['error']), /node node-a stopped or froze while it held the lease of this tick .*found by node-b/);
    // node-b's run is released: its next claim finds nothing lost.
    assert.equal(await answer(releaseScript(redis, [{ ...k, value: found.lease, delayMs: -1 }])), true);
    assert.equal(await redis.hget(k.stateKey, 'run'), '');
    const next = await answer(claimScript(redis, [{ ...base, tick: 3_000, leaseMs: 30, holder: 'node-c' }]));
    assert.equal(next.kind === 'claimed' && next.lost, undefined);
    // A run that ends after its lease ran out, with nobody claiming since, is released as its own: not lost.
    await sleep(60);
    assert.equal(await answer(releaseScript(redis, [{ ...k, value: next.kind === 'claimed' ? next.lease : '', delayMs: -1 }])), false);
    const after = await answer(claimScript(redis, [{ ...base, tick: 4_000, leaseMs: 10_000, holder: 'node-d' }]));
    assert.equal(after.kind === 'claimed' && after.lost, undefined);
    assert.equal((await redis.hgetall(k.statsKey))['lost'], '1');
    assert.equal(await redis.llen(k.runsKey), 1);
  });

  it('dates a lost run whose claim came ahead of its tick at the tick, the earliest it could have started, never before', async () => {
    const k = fresh();
    const now = Number((await redis.time())[0]) * 1_000;
    const tick = now + 5_000; // claimed 5 s ahead (a lead is at most 250 ms; the margin is the test's)
    const base = { ...k, mode: 'grid' as const, nowGuardMs: 1e15 };
    const dead = await answer(claimScript(redis, [{ ...base, tick, leaseMs: 30, holder: 'node-a' }]));
    assert.equal(dead.kind, 'claimed');
    await sleep(60); // node-a died before its tick came
    const found = await answer(claimScript(redis, [{ ...base, tick: tick + 1_000, leaseMs: 10_000, holder: 'node-b' }]));
    assert.equal(found.kind === 'claimed' && found.lost?.startedAt, tick);
    const [run] = (await redis.lrange(k.runsKey, 0, -1)).map((r) => JSON.parse(r) as Record<string, unknown>);
    assert.deepEqual([run?.['scheduledAt'], run?.['startedAt']], [new Date(tick).toISOString(), new Date(tick).toISOString()]);
    assert.match(String(run?.['error']), /node node-a stopped or froze while it held the lease of this tick/);
    assert.equal((await redis.hgetall(k.statsKey))['lastStartedAt'], new Date(tick).toISOString());
  });

  it('keeps one record per fencing token: a lease-lost run counts only while no claim recorded its token lost', async () => {
    const options = { runsCap: 5, keepMs: 60_000 };
    const lockLost = (token: number) => ({
      token, incr: { runs: 1, lockLost: 1 }, fails: 1, last: { lastOutcome: 'lockLost', lastStartedAt: new Date(1_000).toISOString() },
      runs: [JSON.stringify({ outcome: 'lockLost', instance: 'node-a', fencingToken: token })],
    });
    const record = async (k: ReturnType<typeof fresh>, seq: number, token: number) => (await recordScript(redis, [{
      statsKey: k.statsKey, instancesKey: `${k.statsKey}:i`, runsKey: k.runsKey, stateKey: k.stateKey, writersKey: `${k.statsKey}:w`, leaseKey: k.leaseKey,
      writer: 'node-a#1', seq, batch: { incr: { skipped: 1 }, leaseLost: [lockLost(token)] },
    }], options)).map((r) => (r instanceof Error ? r : r.applied));
    // Frozen past its lease, woken before any claim: its own record counts, and clears the marker.
    const k = fresh();
    const base = { ...k, mode: 'grid' as const, nowGuardMs: 1e15 };
    await answer(claimScript(redis, [{ ...base, tick: 1_000, leaseMs: 30, holder: 'node-a' }]));
    await sleep(60);
    assert.deepEqual(await record(k, 1, 1), [true]);
    assert.deepEqual(await record(k, 1, 1), [false], 'a batch resent counts once');
    let stats = await redis.hgetall(k.statsKey);
    assert.deepEqual([stats['runs'], stats['lockLost'], stats['streak'], stats['skipped']], ['1', '1', '1', '1']);
    const next = await answer(claimScript(redis, [{ ...base, tick: 2_000, leaseMs: 10_000, holder: 'node-b' }]));
    assert.equal(next.kind === 'claimed' && next.lost, undefined, 'the next claim finds nothing lost');
    // Taken over while frozen: the claim recorded the token lost, and the woken node's record of it is left out.
    const k2 = fresh();
    await answer(claimScript(redis, [{ ...k2, mode: 'grid', nowGuardMs: 1e15, tick: 1_000, leaseMs: 30, holder: 'node-a' }]));
    await sleep(60);
    const taken = await answer(claimScript(redis, [{ ...k2, mode: 'grid', nowGuardMs: 1e15, tick: 2_000, leaseMs: 10_000, holder: 'node-b' }]));
    assert.equal(taken.kind === 'claimed' && taken.lost?.token, 1);
    assert.deepEqual(await record(k2, 1, 1), [true], 'the rest of the batch applies');
    stats = await redis.hgetall(k2.statsKey);
    assert.deepEqual([stats['runs'], stats['lost'], stats['lockLost'], stats['skipped']], ['1', '1', undefined, '1']);
    assert.deepEqual((await redis.lrange(k2.runsKey, 0, -1)).map((r) => (JSON.parse(r) as { outcome: string }).outcome), ['lost']);
    assert.match(String(await redis.hget(k2.stateKey, 'run')), /^2 2000 \d+ 0 node-b$/, 'node-b\'s marker stays');
  });

  it('keeps one record per fencing token when the release\'s answer is lost: a released run counts, a token recorded lost stays refused after later claims', async () => {
    const options = { runsCap: 5, keepMs: 60_000 };
    const done = (token: number) => ({ token, incr: { runs: 1, succeeded: 1 }, last: { lastOutcome: 'succeeded', lastStartedAt: new Date(token * 1_000).toISOString() }, runs: [JSON.stringify({ outcome: 'succeeded', fencingToken: token })] });
    const record = async (k: ReturnType<typeof fresh>, seq: number, token: number) => (await recordScript(redis, [{
      statsKey: k.statsKey, instancesKey: `${k.statsKey}:i`, runsKey: k.runsKey, stateKey: k.stateKey, writersKey: `${k.statsKey}:w`, leaseKey: k.leaseKey,
      writer: 'node-a#1', seq, batch: { leaseLost: [done(token)] },
    }], options)).map((r) => (r instanceof Error ? r : r.applied));
    const k = fresh();
    const grid = { ...k, mode: 'grid' as const, nowGuardMs: 1e15 };
    // Released (the marker cleared), but the node never heard the answer: its record counts.
    const first = await answer(claimScript(redis, [{ ...grid, tick: 1_000, leaseMs: 10_000, holder: 'node-a' }]));
    assert.equal(first.kind, 'claimed');
    if (first.kind !== 'claimed') return;
    await releaseScript(redis, [{ leaseKey: k.leaseKey, stateKey: k.stateKey, value: first.lease, delayMs: -1 }]);
    assert.deepEqual(await record(k, 1, 1), [true]);
    assert.equal((await redis.hgetall(k.statsKey))['succeeded'], '1');
    // Token 2 is found lost, then token 3 too: a late record of token 2 is still refused.
    for (const tick of [2_000, 3_000, 4_000]) {
      await answer(claimScript(redis, [{ ...grid, tick, leaseMs: 30, holder: 'node-a' }]));
      await sleep(60);
    }
    assert.equal(await redis.hget(k.stateKey, 'lost'), '2:2000 3:3000');
    assert.deepEqual(await record(k, 2, 2), [true], 'the batch applies, without the run');
    const stats = await redis.hgetall(k.statsKey);
    assert.deepEqual([stats['runs'], stats['succeeded'], stats['lost']], ['3', '1', '2']);
    assert.match(String(await redis.hget(k.stateKey, 'run')), /^4 4000 /, 'the marker of the run in progress stays');
  });

  it('keeps one record per tick for a claim whose answer never came, whichever reaches Redis first: the claim, or its node\'s record of it as failed', async () => {
    const options = { runsCap: 5, keepMs: 60_000 };
    const gaveUp = (tick: number) => ({ tick, holder: 'node-a', incr: { runs: 1, failed: 1 }, fails: 1, runs: [JSON.stringify({ outcome: 'failed', scheduledAt: new Date(tick).toISOString() })] });
    const record = async (k: ReturnType<typeof fresh>, seq: number, tick: number) => (await recordScript(redis, [{
      statsKey: k.statsKey, instancesKey: `${k.statsKey}:i`, runsKey: k.runsKey, stateKey: k.stateKey, writersKey: `${k.statsKey}:w`, leaseKey: k.leaseKey,
      writer: 'node-a#1', seq, batch: { leaseLost: [gaveUp(tick)] },
    }], options)).map((r) => (r instanceof Error ? r : r.applied));
    const grid = (k: ReturnType<typeof fresh>, tick: number, holder: string) => answer(claimScript(redis, [{ ...k, mode: 'grid', nowGuardMs: 1e15, tick, leaseMs: 30, holder }]));
    // The record first: the late claim is answered done, and no token is minted for it.
    const k = fresh();
    assert.deepEqual(await record(k, 1, 1_000), [true]);
    assert.equal((await grid(k, 1_000, 'node-a')).kind, 'done');
    assert.equal(await redis.hget(k.stateKey, 'fence'), null, 'no token minted');
    assert.equal((await grid(k, 2_000, 'node-a')).kind, 'claimed', 'the next tick is claimed as ever');
    assert.equal(await redis.hget(k.stateKey, 'gaveUp.node-a'), null, 'and the mark is gone');
    // The claim first, found lost later: the record is left out; found before: the record clears its marker.
    const k2 = fresh();
    await grid(k2, 1_000, 'node-a');
    await sleep(60);
    const found = await grid(k2, 2_000, 'node-b');
    assert.equal(found.kind === 'claimed' && found.lost?.token, 1);
    assert.deepEqual(await record(k2, 1, 1_000), [true]);
    let stats = await redis.hgetall(k2.statsKey);
    assert.deepEqual([stats['runs'], stats['lost'], stats['failed']], ['1', '1', undefined]);
    const k3 = fresh();
    await grid(k3, 1_000, 'node-a');
    assert.deepEqual(await record(k3, 1, 1_000), [true]);
    await sleep(60);
    const next = await grid(k3, 2_000, 'node-b');
    assert.equal(next.kind === 'claimed' && next.lost, undefined, 'nothing found lost');
    stats = await redis.hgetall(k3.statsKey);
    assert.deepEqual([stats['runs'], stats['lost'], stats['failed']], ['1', undefined, '1']);
  });

  it('frees the lease Redis granted to a claim whose node gave up on it when that node\'s record of the claim comes: the next tick is claimed at once, not when the lease expires', async () => {
    const options = { runsCap: 5, keepMs: 60_000 };
    const gaveUp = (tick: number) => ({ tick, holder: 'node-a', incr: { runs: 1, failed: 1 }, fails: 1, runs: [JSON.stringify({ outcome: 'failed', scheduledAt: new Date(tick).toISOString() })] });
    const record = async (k: ReturnType<typeof fresh>, tick: number) => (await recordScript(redis, [{
      statsKey: k.statsKey, instancesKey: `${k.statsKey}:i`, runsKey: k.runsKey, stateKey: k.stateKey, writersKey: `${k.statsKey}:w`, leaseKey: k.leaseKey,
      writer: 'node-a#1', seq: 1, batch: { leaseLost: [gaveUp(tick)] },
    }], options)).map((r) => (r instanceof Error ? r : r.applied));
    const grid = (k: ReturnType<typeof fresh>, tick: number, holder: string, leaseMs: number) => answer(claimScript(redis, [{ ...k, mode: 'grid', nowGuardMs: 1e15, tick, leaseMs, holder }]));
    // Granted, but its answer never reached node-a (its event loop was blocked past the answer's
    // timeout, or the connection dropped with the answer on its way): no run holds the lease.
    const k = fresh();
    assert.equal((await grid(k, 1_000, 'node-a', 30_000)).kind, 'claimed');
    assert.deepEqual(await record(k, 1_000), [true]);
    assert.equal(await redis.exists(k.leaseKey), 0, 'the lease no run holds is deleted');
    const next = await grid(k, 2_000, 'node-b', 30_000);
    assert.equal(next.kind, 'claimed', 'the next tick is claimed at once');
    assert.equal(next.kind === 'claimed' && next.lost, undefined, 'and finds nothing lost');
    assert.equal(Number((await redis.hgetall(k.statsKey))['failed']), 1, 'the tick is counted once, failed');
    // Taken over before the record came: the lease is another claim's, and stays.
    const k2 = fresh();
    await grid(k2, 1_000, 'node-a', 30);
    await sleep(60);
    const taken = await grid(k2, 2_000, 'node-b', 30_000);
    assert.equal(taken.kind === 'claimed' && taken.lost?.tick, 1_000);
    assert.deepEqual(await record(k2, 1_000), [true]);
    assert.match(String(await redis.get(k2.leaseKey)), /^node-b since .* token 2$/, 'node-b\'s lease stays');
  });
});
