/**
 * A node stopped (SIGTERM) while its claim of a tick is in flight: Redis answers only after
 * the stop has begun, so the node has the tick and must not start it. That tick is then
 * either run by another node within the misfire grace, or at least counted as missed; a
 * tick that runs nowhere and is counted nowhere is lost silently.
 *
 * Made deterministic: the other node is frozen over the tick (so the stopping node's claim
 * is the first), and Redis is stalled from before the earliest moment the claim may be sent
 * (a claim goes out up to MAX_CLAIM_LEAD_MS ahead of its tick, as far as the last answers
 * took) to 0.4 s after the tick. A stall that began later let a claim sent early be answered
 * before the stop, and the node rightly ran that tick.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_CLAIM_LEAD_MS } from '../../src/runner/leads.js';
import { Checks } from '../report.js';
import { readRunLog, startsOf } from '../runlog.js';
import { compareCounts, duplicates, missedCount, stage, tickCoverage, type Scenario } from '../scenario.js';

const until = (t: number): Promise<void> => sleep(Math.max(0, t - Date.now()));

export const stopClaim: Scenario = {
  name: 'node stopped during its claim',
  faults: () => 'SIGTERM to a node while its claim waits on a stalled Redis (0.7 s); the other node frozen over that tick',
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'stopclaim', ['tick']);
    try {
      const [a, b] = await Promise.all([s.cluster.start('a'), s.cluster.start('b')]);
      if (!a || !b) throw new Error('nodes did not start');
      const t0 = Date.now();
      await sleep(2_000);
      // The stall must begin before the claim is sent for it to be in flight at the stop.
      let tick = 0;
      let stopped: Promise<number | null> | undefined;
      for (let attempt = 0; attempt < 3 && stopped === undefined; attempt++) {
        tick = Math.ceil((Date.now() + 1_000) / 1_000) * 1_000;
        const stallAt = tick - MAX_CLAIM_LEAD_MS - 50;
        await until(stallAt - 100);
        s.cluster.freeze(b);
        await until(stallAt);
        s.redis.pause();
        if (Date.now() >= tick - MAX_CLAIM_LEAD_MS - 10) {
          s.redis.resume();
          s.cluster.thaw(b);
          continue;
        }
        await until(tick + 200);
        stopped = s.cluster.stop(a);
        await until(tick + 400);
        s.redis.resume();
        await until(tick + 500);
        s.cluster.thaw(b);
      }
      if (stopped === undefined) throw new Error('could not stall Redis before a tick (machine too busy)');
      const code = await stopped;
      c.equal('the stopped node exits 0', code ?? -1, 0);
      await until(tick + 3_500);
      const endAt = Date.now();
      const codes = await s.cluster.stopAll();
      c.equal('exit codes of the other stops', codes.filter((x) => x !== 0).length, 0, `codes ${codes.join(',')}`);
      const all = readRunLog(s.runLog);
      const runsOfTick = startsOf(all, 'tick').filter((l) => l.tick === tick);
      const missed = await missedCount(s, ['tick']);
      const claimedByStopping = a.proc.lines.some((l) => l['msg'] === 'run started' && l['scheduledAt'] === new Date(tick).toISOString());
      c.add('the stopping node does not start the tick it claimed after its stop began', !claimedByStopping, claimedByStopping ? 'it ran it' : 'it did not');
      c.add('the tick the stopping node claimed is run by the other node, or counted missed',
        runsOfTick.length === 1 || (runsOfTick.length === 0 && missed >= 1),
        `${new Date(tick).toISOString()}: ${runsOfTick.length === 0 ? 'run on no node' : `run on ${runsOfTick.map((l) => l.inst).join(', ')}`}, ${missed} counted missed`);
      const next = startsOf(all, 'tick').filter((l) => l.tick === tick + 1_000);
      c.add('the stopping node releases the lease it will not use: the next tick runs on time', next.length === 1 && next[0] !== undefined && next[0].t - next[0].tick < 500,
        next[0] ? `${next[0].inst}, ${next[0].t - next[0].tick} ms after its tick` : 'it ran on no node (the lease was left to expire)');
      const dup = duplicates(all, ['tick']);
      c.equal('ticks run twice', dup, 0);
      const cov = tickCoverage(all, 'tick', [{ from: t0 + 1_000, to: endAt - 1_000 }]);
      c.add('every other tick ran', cov.notRun.every((t) => t === tick), `not run: ${cov.notRun.map((t) => new Date(t).toISOString().slice(11, 19)).join(' ') || 'none'}`);
      const lost = await compareCounts(c, s, all, ['tick']);
      return { expected: cov.expected, done: cov.done, duplicated: dup, lostCounts: lost, missed, checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
