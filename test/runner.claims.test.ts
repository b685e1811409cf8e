/**
 * How the runner follows its coordinator's answers (SPEC 4), with an injected clock and a
 * scripted coordinator: claimed skips, misfire retries within the grace, missed ticks,
 * claim failures as failed runs, early claims.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Scheduler } from '../src/runner/runner.js';
import { MAX_CLAIM_LEAD_MS, nextClaimLead } from '../src/runner/leads.js';
import type { ClaimResult, ClaimRequest, Coordinator, HeldLease } from '../src/lease/port.js';
import type { ClaimOrder } from '../src/runner/order.js';
import { LeaseholdError, type JobContext } from '../src/index.js';
import { rendezvousOrder } from '../src/status/spread.js';
import { ManualClock } from './helpers/clock.js';
import { memoryLogger } from './helpers/log.js';

const T0 = Date.parse('2026-05-04T12:00:00.000Z');

function scripted(answer: (r: ClaimRequest, n: number) => ClaimResult | Error): Coordinator & { requests: ClaimRequest[]; released: number } {
  const requests: ClaimRequest[] = [];
  const self = {
    requests,
    released: 0,
    async claim(r: ClaimRequest): Promise<ClaimResult> {
      requests.push(r);
      const a = answer(r, requests.length);
      if (a instanceof Error) throw a;
      return a;
    },
    close: async () => {},
  };
  return self;
}

function lease(token: number, onRelease: (handBack: boolean) => void): HeldLease {
  return { token, watch: () => ({ stop() {}, check() {} }), release: async (_delayMs, handBack) => { onRelease(handBack === true); return true; } };
}

/** A run that lasts `ms` on the manual clock, or until it is aborted. */
function lasting(clock: ManualClock, ms: number): (ctx: JobContext) => Promise<void> {
  return (ctx) => new Promise<void>((r) => {
    clock.setTimer(r, ms);
    ctx.signal.addEventListener('abort', () => r());
  });
}

/**
 * A node with `claimOrder` over a scripted coordinator, running one job every second: the claims
 * it sends (tick and ms after it, from T0, and whether as the backup) and its skips.
 */
function ranked(claimOrder: ClaimOrder, answer: (r: ClaimRequest, n: number) => ClaimResult) {
  const clock = new ManualClock(T0 + 500);
  const { logger } = memoryLogger();
  const sent: Array<[tick: number, late: number, backup: boolean]> = [];
  const coordinator = scripted((r, n) => {
    sent.push([r.tick - T0, clock.now() - r.tick, r.backup === true]);
    return answer(r, n);
  });
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, coordinator, claimOrder });
  const skips: string[] = [];
  core.on('skipped', (e) => skips.push(`${e.scheduledAt - T0} ${e.reason}`));
  core.add({ id: 'j', scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.start();
  return { clock, core, sent, skips };
}

function setup(coordinator: Coordinator) {
  const clock = new ManualClock(T0 + 500);
  const { logger } = memoryLogger();
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, coordinator });
  const events: string[] = [];
  core.on('runStarted', (e) => events.push(`start ${e.scheduledAt - T0} token ${e.fencingToken}`));
  core.on('runEnded', (e) => events.push(`end ${e.scheduledAt - T0} ${e.outcome}${e.error ? ` ${e.error}` : ''}`));
  core.on('skipped', (e) => events.push(`skip ${e.scheduledAt - T0} ${e.reason}`));
  core.on('missed', (e) => events.push(`missed ${e.count}`));
  return { clock, core, events };
}

test('a tick another node already claimed is a skip with reason claimed, not a run', async () => {
  const c = scripted((r) => ({ kind: 'done', lastTick: r.tick, counted: false }));
  const { clock, core, events } = setup(c);
  core.add({ id: 'j', scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.start();
  await clock.advance(2_000);
  assert.deepEqual(events, ['skip 1000 claimed', 'skip 2000 claimed']);
  assert.deepEqual(c.requests.map((r) => [r.tick - T0, r.mode]), [[1000, 'grid'], [2000, 'grid']]);
  await core.stop();
});

test('a claim that found the lease held is retried within the misfire grace and runs the tick late, once', async () => {
  let released = 0;
  const c = scripted((r, n) => (n <= 3 ? { kind: 'held', holder: 'other', value: 'other', pttlMs: 5_000 } : { kind: 'claimed', lease: lease(7, () => released++), token: 7, previousTick: r.tick - 10_000, serverNowMs: r.tick }));
  const { clock, core, events } = setup(c);
  core.add({ id: 'j', scope: 'installation', cron: '*/10 * * * * *', lease: '5s', run: () => {} });
  core.start();
  await clock.advance(9_500 + 3_000);
  assert.deepEqual(events, ['start 10000 token 7', 'end 10000 succeeded']);
  assert.ok(c.requests.length === 4 && c.requests.every((r) => r.tick === T0 + 10_000), 'retries are for the same tick');
  assert.ok(c.requests[3] && c.requests[3].tick === T0 + 10_000);
  assert.equal(released, 1, 'the lease is released when the run ends');
  await core.stop();
});

test('past the misfire grace the tick is given up as claimed', async () => {
  const c = scripted(() => ({ kind: 'held', holder: 'other', value: 'other', pttlMs: 5_000 }));
  const { clock, core, events } = setup(c);
  core.add({ id: 'j', scope: 'installation', cron: '*/10 * * * * *', lease: '2s', run: () => {} });
  core.start();
  await clock.advance(9_500 + 5_000);
  assert.deepEqual(events, ['skip 10000 claimed']);
  const last = c.requests.at(-1);
  assert.ok(last && last.tick === T0 + 10_000);
  assert.ok(c.requests.length >= 3 && c.requests.length <= 12, `${c.requests.length} attempts within a 2 s grace`);
  await core.stop();
});

test('ticks between the previous claim and this one are counted as missed', async () => {
  const c = scripted((r) => ({ kind: 'claimed', lease: lease(1, () => {}), token: 1, previousTick: r.tick - 4_000, serverNowMs: T0 }));
  const { clock, core, events } = setup(c);
  core.add({ id: 'j', scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.start();
  await clock.advance(1_000);
  assert.deepEqual(events.slice(0, 1), ['missed 3']);
  await core.stop();
});

test('a claim Redis refused is a failed run carrying the error, not someone else\'s turn', async () => {
  const c = scripted(() => new LeaseholdError('redisError', 'Connection is closed.'));
  const { clock, core, events } = setup(c);
  core.add({ id: 'j', scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.start();
  await clock.advance(1_000);
  assert.deepEqual(events, ['end 1000 failed Connection is closed.'], 'the lease port\'s own message, as it is');
  await core.stop();
});

test('an early claim (shared clock not at the tick yet) is retried at the tick', async () => {
  const c = scripted((r, n) => (n === 1 ? { kind: 'early', serverNowMs: r.tick - 40 } : { kind: 'claimed', lease: lease(2, () => {}), token: 2, previousTick: null, serverNowMs: T0 }));
  const { clock, core, events } = setup(c);
  core.add({ id: 'j', scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.start();
  await clock.advance(1_100);
  assert.deepEqual(events, ['start 1000 token 2', 'end 1000 succeeded']);
  assert.equal(c.requests.length, 2);
  await core.stop();
});

test('fixedDelay installation: a later due time from the cluster moves the next claim there', async () => {
  const c = scripted((r, n) => (n === 1 ? { kind: 'notDue', dueMs: T0 + 3_000 } : { kind: 'claimed', lease: lease(3, () => {}), token: 3, previousTick: null, serverNowMs: T0 }));
  const { clock, core, events } = setup(c);
  core.add({ id: 'd', scope: 'installation', fixedDelay: '1s', run: () => {} });
  core.start();
  await clock.advance(3_000);
  assert.deepEqual(events, ['start 3000 token 3', 'end 3000 succeeded']);
  assert.deepEqual(c.requests.map((r) => [r.tick - T0, r.mode]), [[500, 'delay'], [3000, 'delay']]);
  await core.stop();
});

test('stop() during a claim in flight waits for it, hands back the tick of a lease it won, quietly, running nothing', async () => {
  let released = 0;
  let handedBack = false;
  let answer!: (d: ClaimResult) => void;
  const c: Coordinator = {
    claim: () => new Promise<ClaimResult>((r) => (answer = r)),
    close: async () => {},
  };
  const { clock, core, events } = setup(c);
  core.add({ id: 'j', scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.start();
  await clock.advance(600);
  const stopped = core.stop();
  answer({ kind: 'claimed', lease: lease(9, (back) => { released++; handedBack = back; }), token: 9, previousTick: null, serverNowMs: T0 });
  await stopped;
  assert.deepEqual(events, [], 'nothing runs, and a clean stop counts nothing missed (another node may run the tick)');
  assert.equal(released, 1);
  assert.equal(handedBack, true, 'the tick is handed back');
});

test('with a claim lead the claim goes out ahead of the tick and the run starts on the tick, never before', async () => {
  const clock = new ManualClock(T0 + 500);
  const sentAt: number[] = [];
  const c: Coordinator = {
    claimLeadMs: 10,
    async claim(r) {
      sentAt.push(clock.now() - r.tick);
      return { kind: 'claimed', lease: lease(1, () => {}), token: 1, previousTick: null, serverNowMs: T0 };
    },
    close: async () => {},
  };
  const { logger } = memoryLogger();
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, coordinator: c });
  const started: number[] = [];
  core.add({ id: 'j', scope: 'installation', cron: '* * * * * *', run: () => void started.push(clock.now()) });
  core.start();
  await clock.advance(495);
  assert.deepEqual(sentAt, [-160], 'the first claim left 160 ms before the tick: no round trip is known yet');
  assert.deepEqual(started, [], 'no run before its tick');
  await clock.advance(5);
  assert.deepEqual(started, [T0 + 1_000]);
  await clock.advance(15_000);
  assert.deepEqual(sentAt, [-160, -160, -80, -80, -80, -80, -40, -40, -40, -40, -20, -20, -20, -20, -10, -10],
    'the first answer sets the lead; then quick answers halve it after four ticks in a row that needed half of it, down to the coordinator\'s');
  assert.deepEqual(started, sentAt.map((_, i) => T0 + (i + 1) * 1_000), 'every run on its tick');
  await core.stop();
});

test('a claim whose answer came late goes out earlier at the next tick, by what its round trip took, and its run starts on the tick', async () => {
  const clock = new ManualClock(T0 + 500);
  const sentAt: number[] = [];
  const leads: Array<number | undefined> = [];
  let answerMs = 200; // Redis busy with a thousand other claims of the same tick
  const c: Coordinator = {
    claimLeadMs: 10,
    claim: (r) => {
      sentAt.push(clock.now() - r.tick);
      leads.push(r.leadMs);
      return new Promise((resolve) => clock.setTimer(() => resolve({ kind: 'claimed', lease: lease(1, () => {}), token: 1, previousTick: null, serverNowMs: clock.now() }), answerMs));
    },
    close: async () => {},
  };
  const { logger } = memoryLogger();
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, coordinator: c });
  const lateMs: number[] = [];
  core.on('runStarted', (e) => lateMs.push(e.startedAt - e.scheduledAt));
  core.add({ id: 'j', scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.start();
  await clock.advance(1_600);
  assert.deepEqual(sentAt, [-160, -250], 'the second claim left ahead by its round trip and a quarter more, at most 250 ms');
  assert.deepEqual(leads, [160, 250], 'each claim says how early it is, so Redis accepts it that early');
  assert.deepEqual(lateMs, [40, 0], 'the first run started when its answer came, the second on its tick');
  answerMs = 2; // the rush is over: the lead halves after four calm ticks, never below the coordinator's
  await clock.advance(8_000);
  const later = sentAt.slice(2);
  assert.ok(later.every((ms, i) => i === 0 || ms >= (later[i - 1] ?? 0)), `each answer shrinks the lead of the fire after the one planned already: ${later.join(', ')}`);
  assert.ok(lateMs.every((ms, i) => i === 0 || ms === 0), `every later run on its tick: ${lateMs.join(', ')}`);
  await clock.advance(20_000);
  assert.equal(sentAt.at(-1), -10, 'back to the coordinator\'s lead');
  await core.stop();
});

test('claim leads double from the coordinator\'s as round trips need, halve when twice enough, and stop at the cap', () => {
  assert.equal(nextClaimLead(0, 3, 10), 10, 'a quick answer keeps the coordinator\'s lead');
  assert.equal(nextClaimLead(10, 30, 10), 40, '30 ms needs 40 (a quarter to spare)');
  assert.equal(nextClaimLead(40, 30, 10), 40, 'steady');
  assert.equal(nextClaimLead(80, 40, 10), 80, 'not yet twice enough (52 needed)');
  assert.equal(nextClaimLead(160, 30, 10), 80, 'twice enough: halved');
  assert.equal(nextClaimLead(20, 5_000, 10), MAX_CLAIM_LEAD_MS);
  assert.equal(nextClaimLead(0, 50, 0), 0, 'no lead without a coordinator\'s');
  // From the cap, leads halve on the ladder: jobs whose leads came down at different ticks fire
  // together again, and their claims travel in one call.
  assert.equal(nextClaimLead(MAX_CLAIM_LEAD_MS, 30, 10), 160, 'the cap stands for the ladder\'s 320: halved to 160');
  const seen: number[] = [];
  for (let lead = MAX_CLAIM_LEAD_MS; lead > 10; ) seen.push(lead = nextClaimLead(lead, 3, 10));
  assert.deepEqual(seen, [160, 80, 40, 20, 10]);
});

test('the claims of jobs due together go out together every tick, however differently their answers came', async () => {
  // Answers of one call come back one after another, and a busy node reads some of them late:
  // a job whose answer came late must not go out alone, earlier, at the next tick.
  const clock = new ManualClock(T0 + 500);
  const sent: Array<[tick: number, at: number]> = [];
  let n = 0;
  const c: Coordinator = {
    claimLeadMs: 10,
    claim: (r) => {
      sent.push([r.tick, clock.now()]);
      const answerMs = [1, 30, 2, 60, 3, 14][n++ % 6] ?? 1;
      return new Promise((resolve) => clock.setTimer(() => resolve({ kind: 'claimed', lease: lease(1, () => {}), token: 1, previousTick: null, serverNowMs: clock.now() }), answerMs));
    },
    close: async () => {},
  };
  const { logger } = memoryLogger();
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, coordinator: c });
  const lateMs: number[] = [];
  core.on('runStarted', (e) => lateMs.push(e.startedAt - e.scheduledAt));
  for (let i = 0; i < 5; i++) core.add({ id: `j${i}`, scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.start();
  await clock.advance(20_500);
  const moments = new Map<number, Set<number>>();
  for (const [tick, at] of sent) moments.set(tick, (moments.get(tick) ?? new Set()).add(at));
  assert.ok(moments.size >= 20, `${moments.size} ticks claimed`);
  for (const [tick, at] of moments) assert.equal(at.size, 1, `the claims of tick ${tick - T0} went out at ${[...at].map((t) => t - tick).join(', ')} ms`);
  assert.ok(lateMs.slice(10).every((ms) => ms === 0), `once the lead is learned every run starts on its tick: ${lateMs.join(', ')}`);
  await core.stop();
});

test('a claim lead is at most a quarter of the interval, and 250 ms', async () => {
  const clock = new ManualClock(T0 + 500);
  const sentAt: number[] = [];
  const c: Coordinator = {
    claimLeadMs: 10,
    claim: (r) => {
      sentAt.push(clock.now() - r.tick);
      return new Promise((resolve) => clock.setTimer(() => resolve({ kind: 'claimed', lease: lease(1, () => {}), token: 1, previousTick: null, serverNowMs: clock.now() }), 900));
    },
    close: async () => {},
  };
  const { logger } = memoryLogger();
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, coordinator: c });
  core.add({ id: 'every-second', scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.add({ id: 'every-ten', scope: 'installation', cron: '*/10 * * * * *', run: () => {} });
  core.start();
  await clock.advance(25_000);
  assert.ok(sentAt.length > 10);
  assert.ok(Math.min(...sentAt) >= -250, `never more than 250 ms ahead: ${Math.min(...sentAt)}`);
  assert.ok(sentAt.includes(-250), 'the ten-second job reaches the cap');
  await core.stop();
});

test('with a claim lead, a run still going at the early fire is judged on the tick: ending just before it is no overrun', async () => {
  const clock = new ManualClock(T0 + 500);
  const c: Coordinator = {
    claimLeadMs: 10,
    claim: async () => ({ kind: 'claimed', lease: lease(1, () => {}), token: 1, previousTick: null, serverNowMs: T0 }),
    close: async () => {},
  };
  const { logger } = memoryLogger();
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, coordinator: c });
  const events: string[] = [];
  core.on('runStarted', (e) => events.push(`start ${e.scheduledAt - T0}`));
  core.on('skipped', (e) => events.push(`skip ${e.scheduledAt - T0} ${e.reason}`));
  // Each run lasts until 5 ms before the next tick: inside the claim lead.
  core.add({
    id: 'j', scope: 'installation', cron: '* * * * * *',
    run: lasting(clock, 995),
  });
  core.start();
  await clock.advance(2_600);
  assert.deepEqual(events, ['start 1000', 'start 2000', 'start 3000']);
  await core.stop();
});

test('ticks while paused, while the schedule was invalid, or on an older schedule are not counted missed', async () => {
  const clock = new ManualClock(T0);
  const { logger } = memoryLogger();
  const overrides: Record<string, string> = {};
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, settings: { get: () => ({ ...overrides }) } });
  const missed: number[] = [];
  core.on('missed', (e) => missed.push(e.count));
  core.add({ id: 'j', scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.start();
  await clock.advance(3_000);
  overrides['paused'] = 'true';
  core.refresh('j');
  await clock.advance(3_000);
  overrides['paused'] = 'false';
  core.refresh('j');
  await clock.advance(2_000);
  overrides['cron'] = 'not a cron';
  core.refresh('j');
  await clock.advance(3_000);
  overrides['cron'] = '*/2 * * * * *';
  core.refresh('j');
  await clock.advance(5_000);
  assert.deepEqual(missed, [], 'nothing was due and run by no node');
  await core.stop();
});

test('a tick this node skipped because its own run overran is an overrun, not also a missed tick (a start late in a period, and every overrun)', async () => {
  // The node starts late in a period: the current period's tick is taken at once, and its run
  // is still going at the next tick, which is skipped here as an overrun.
  const clock = new ManualClock(T0 + 800);
  const { logger } = memoryLogger();
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock });
  const events: string[] = [];
  core.on('runStarted', (e) => events.push(`start ${e.scheduledAt - T0}`));
  core.on('skipped', (e) => events.push(`skip ${e.scheduledAt - T0} ${e.reason}`));
  core.on('missed', (e) => events.push(`missed ${e.count}`));
  core.add({ id: 'rollup', scope: 'installation', fixedRate: '1s', run: () => new Promise<void>((r) => clock.setTimer(r, 700)) });
  core.start();
  await clock.advance(1_500);
  // Then a job whose every run overruns two ticks.
  core.remove('rollup');
  core.add({
    id: 'slow', scope: 'installation', fixedRate: '1s',
    run: lasting(clock, 2_500),
  });
  await clock.advance(4_000);
  assert.deepEqual(events, ['start 0', 'skip 1000 overrun', 'start 2000', 'start 2000', 'skip 3000 overrun', 'skip 4000 overrun', 'start 5000', 'skip 6000 overrun']);
  await core.stop();
});

test('a tick counted as a failed claim before the job was due again is not taken off the ticks missed since', async () => {
  // Every second, then every 2 s from 3.5 s on. Redis was away for the ticks at 4 s and 6 s: the
  // claims fail. The claim of 8 s finds the last claimed tick at 2 s and two ticks counted as
  // failed claims, 3 s (on the old schedule, before the job was due again) and 6 s. Of the new
  // schedule's ticks before 8 s, 4 s was counted by no one: it is missed; 6 s is not.
  const clock = new ManualClock(T0 + 500);
  const { logger } = memoryLogger();
  const overrides: Record<string, string> = {};
  const coordinator = scripted((r) => {
    const at = r.tick - T0;
    if (at === 4_000 || at === 6_000) return new LeaseholdError('redisError', 'Connection is closed.');
    if (at === 8_000) return { kind: 'claimed', lease: lease(9, () => {}), token: 9, previousTick: T0 + 2_000, serverNowMs: r.tick, failedTicks: [T0 + 3_000, T0 + 6_000] };
    return { kind: 'claimed', lease: lease(1, () => {}), token: 1, previousTick: r.tick - 1_000, serverNowMs: r.tick };
  });
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, coordinator, settings: { get: () => ({ ...overrides }) } });
  const missed: number[] = [];
  core.on('missed', (e) => missed.push(e.count));
  core.add({ id: 'j', scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.start();
  await clock.advance(3_000);
  overrides['cron'] = '*/2 * * * * *';
  core.refresh('j');
  await clock.advance(5_000);
  assert.deepEqual(coordinator.requests.map((r) => r.tick - T0), [1_000, 2_000, 3_000, 4_000, 6_000, 8_000]);
  assert.deepEqual(missed, [1]);
  await core.stop();
});

test('a tick this node skipped as an overrun that another node counted as a failed claim is taken off the missed ticks once', async () => {
  // The run of 1 s lasts 2.5 s: this node skips 2 s and 3 s as overruns. Another node's claim of
  // 2 s got no answer and was counted failed. Nobody claims 4 s (this node is not among its
  // claimers). The claim of 5 s finds the last claimed tick at 1 s: of 2, 3 and 4 s, only 4 s is missed.
  const clock = new ManualClock(T0 + 500);
  const { logger } = memoryLogger();
  const coordinator = scripted((r) => {
    if (r.tick === T0 + 5_000) return { kind: 'claimed', lease: lease(2, () => {}), token: 2, previousTick: T0 + 1_000, serverNowMs: r.tick, failedTicks: [T0 + 2_000] };
    return { kind: 'claimed', lease: lease(1, () => {}), token: 1, previousTick: null, serverNowMs: r.tick };
  });
  const claimOrder = { place: (_job: string, tick: number | undefined) => (tick === T0 + 4_000 ? 2 : 0), handoffMs: 100 };
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, coordinator, claimOrder });
  const events: string[] = [];
  core.on('skipped', (e) => events.push(`skip ${e.scheduledAt - T0} ${e.reason}`));
  core.on('missed', (e) => events.push(`missed ${e.count}`));
  core.add({
    id: 'slow', scope: 'installation', cron: '* * * * * *',
    run: lasting(clock, 2_500),
  });
  core.start();
  await clock.advance(4_600);
  assert.deepEqual(coordinator.requests.map((r) => r.tick - T0), [1_000, 5_000]);
  assert.deepEqual(events, ['skip 2000 overrun', 'skip 3000 overrun', 'missed 1']);
  await core.stop();
});

test('a backup claims a hand-off delay after the tick and says it is the backup, so the store reads before it claims; the first claimer does not', async () => {
  // This node is the backup of the even seconds and the first claimer of the odd ones.
  const claimOrder = { place: (_job: string, tick: number | undefined) => ((tick ?? 0) - T0) % 2_000 === 0 ? 1 : 0, handoffMs: 100 };
  const { clock, core, sent, skips } = ranked(claimOrder, (r) => ({ kind: 'done', lastTick: r.tick, counted: false }));
  await clock.advance(4_200);
  assert.deepEqual(sent, [[1_000, 0, false], [2_000, 100, true], [3_000, 0, false], [4_000, 100, true]]);
  assert.deepEqual(skips, ['1000 claimed', '3000 claimed'], 'a backup that finds the tick taken is no skip');
  await core.stop();
});

test("a node passing over a suspect does not claim past the tick's misfire grace: no tick starts later than its grace", async () => {
  // The job runs every second (grace 1 s). Two hand-off delays of 750 ms, as a node passing over
  // a suspect waits, are past it on the odd seconds; 200 ms on the even ones.
  const claimOrder = { place: () => 1, handoffMs: 750, handoffFor: (_job: string, tick: number) => ((tick - T0) % 2_000 === 0 ? 200 : 1_500) };
  const { clock, core, sent, skips } = ranked(claimOrder, (r) => ({ kind: 'done', lastTick: r.tick, counted: false }));
  await clock.advance(6_200);
  assert.deepEqual(sent, [[2_000, 200, true], [4_000, 200, true], [6_000, 200, true]]);
  assert.deepEqual(skips, []);
  await core.stop();
});

test('the node ranked second claims however long its hand-off: its claim is how it learns that the first let the tick pass', async () => {
  const { clock, core, sent } = ranked({ place: () => 1, handoffMs: 1_500 }, (r) => ({ kind: 'done', lastTick: r.tick, counted: false }));
  await clock.advance(4_200);
  assert.deepEqual(sent, [[1_000, 1_500, true], [3_000, 1_500, true]]);
  await core.stop();
});

test('a backup whose first claimer let a tick pass claims its next ticks at the tick, reading first, until it finds one claimed again', async () => {
  // Two live nodes; 'x' ranks first for the first eight ticks of the job (a job id the hash
  // makes so: this node is their backup, and each next fire is planned, a hand-off late, before
  // the answer that raises the suspicion). 'x' is dead until 6 s.
  const clock = new ManualClock(T0 + 500);
  const { logger, lines } = memoryLogger();
  const claimOrder = rendezvousOrder('me', () => ['me', 'x']);
  const ticks = Array.from({ length: 8 }, (_, i) => T0 + (i + 1) * 1_000);
  const job = Array.from({ length: 5_000 }, (_, i) => `j${i}`).find((id) => ticks.every((t) => claimOrder.place(id, t) === 1)) as string;
  assert.ok(job !== undefined, 'a job whose first eight ticks this node is the backup of');
  const sent: Array<[tick: number, late: number]> = [];
  const coordinator = scripted((r) => {
    if (r.backup === true) sent.push([r.tick - T0, clock.now() - r.tick]);
    const xClaimed = r.tick >= T0 + 6_000;
    return xClaimed ? { kind: 'done', lastTick: r.tick, counted: false } : { kind: 'claimed', lease: lease(1, () => {}), token: 1, previousTick: null, serverNowMs: r.tick };
  });
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, coordinator, claimOrder });
  core.add({ id: job, scope: 'installation', cron: '* * * * * *', run: () => {} });
  core.start();
  await clock.advance(8_200);
  assert.deepEqual(sent, [
    // The first tick 'x' lets pass waits the hand-off delay, the next ones are claimed on time;
    // the first read that finds its tick claimed shows 'x' alive, and the hand-off delay is back.
    [1_000, 100], [2_000, 0], [3_000, 0], [4_000, 0], [5_000, 0], [6_000, 0], [7_000, 100], [8_000, 100],
  ]);
  assert.equal(lines.filter((l) => l['level'] === 30 && /^node x let tick .* pass to this node/.test(String(l['msg']))).length, 1, 'said once, at info');
  await core.stop();
});

test('a fixedDelay backup keeps its hand-off delay when the first claimer lets its runs pass: both would fire at the due time', async () => {
  const clock = new ManualClock(T0 + 500);
  const { logger } = memoryLogger();
  const { handoffFor, backupAnswered } = rendezvousOrder('me', () => ['me', 'x']);
  const claimOrder = { place: () => 1, handoffMs: 100, handoffFor, backupAnswered };
  const late: number[] = [];
  let due = T0 + 500;
  const coordinator = scripted((r) => {
    late.push(clock.now() - due);
    due = clock.now() + 1_000;
    return { kind: 'claimed', lease: lease(1, () => {}), token: 1, previousTick: null, serverNowMs: r.tick };
  });
  const core = new Scheduler({ instanceId: 'me', logger, shutdownGraceMs: 0, clock, coordinator, claimOrder });
  core.add({ id: 'd', scope: 'installation', fixedDelay: '1s', run: () => {} });
  core.start();
  await clock.advance(5_000);
  assert.ok(late.length >= 3, `${late.length} runs`);
  assert.deepEqual(late, late.map(() => 100));
  await core.stop();
});

test("a backup's claim retried after finding the lease held is still the backup's: it reads first, and a tick found taken is no skip", async () => {
  const claimOrder = { place: (_job: string, tick: number | undefined) => (tick === T0 + 1_000 ? 1 : 2), handoffMs: 100 };
  // The first claimer's earlier run still holds the lease; then the first claimer has the tick.
  const { clock, core, sent, skips } = ranked(claimOrder, (r, n) => (n === 1 ? { kind: 'held', holder: 'x', value: 'x', pttlMs: 300 } : { kind: 'done', lastTick: r.tick, counted: false }));
  await clock.advance(1_000);
  assert.deepEqual(sent, [[1_000, 100, true], [1_000, 300, true]]);
  assert.deepEqual(skips, [], 'the first claimer ran it: no skip here');
  await core.stop();
});
