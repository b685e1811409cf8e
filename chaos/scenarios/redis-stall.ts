/**
 * Redis frozen (SIGSTOP) during a leased run: connections stay open and nothing answers.
 * The run must abort as `lockLost` within its lease time, instance jobs must keep running,
 * and what was counted meanwhile must reach Redis once it answers again.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_CLAIM_LEAD_MS } from '../../src/runner/leads.js';
import { waitRedisHealthy } from '../cluster.js';
import { Checks } from '../report.js';
import { endOf, readRunLog, startsOf, waitForLog } from '../runlog.js';
import { stopGracefully, compareCounts, duplicates, missedCount, stage, tickCoverage, type Scenario } from '../scenario.js';

const LEASE_MS = 2_000;

export const redisStall: Scenario = {
  name: 'Redis stalled mid-run',
  faults: (quick) => `SIGSTOP of redis-server for ${quick ? 4 : 8} s during a leased run (lease 2 s), 2 nodes`,
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'stall', ['work', 'tick', 'local'], { env: { CHAOS_WORK_LEASE: `${LEASE_MS}ms`, CHAOS_WORK_MS: '60000' } });
    try {
      const nodes = await Promise.all(['a', 'b'].map((id) => s.cluster.start(id)));
      const t0 = Date.now();
      const lines0 = await waitForLog(s.runLog, (ls) => startsOf(ls, 'work').length > 0, 10_000, 'a run of work');
      const run = startsOf(lines0, 'work')[0];
      if (run === undefined) throw new Error('no run of work');
      await sleep(Math.max(0, run.t + 500 - Date.now()));
      const client = s.client; // connected before the stall
      await client.ping();
      const stallAt = Date.now();
      s.redis.pause();
      let resumeAt = 0;
      // The scenario's own check that the fault held: a PING every second, none answered.
      let answered = 0;
      const stalled = (async () => {
        while (resumeAt === 0) {
          // Answered before the resume: Redis was not stopped.
          if (await Promise.race([client.ping().then(() => resumeAt === 0, () => false), sleep(300).then(() => false)])) answered++;
          await sleep(700);
        }
      })();
      try {
        const lines = await waitForLog(s.runLog, (ls) => endOf(ls, run) !== undefined, LEASE_MS + 3_000, 'the end of the leased run').catch(() => readRunLog(s.runLog));
        const ended = endOf(lines, run);
        c.add('the leased run ends as lockLost', ended?.ev === 'abort' && ended.reason === 'lockLost', ended ? `${ended.ev} ${ended.reason ?? ''}` : 'not within the lease time');
        if (ended) c.atMost('it is aborted within the lease time of the stall', ended.t - stallAt, LEASE_MS, ' ms');
        await sleep(Math.max(0, (ctx.quick ? 4_000 : 8_000) - (Date.now() - stallAt)));
      } finally {
        resumeAt = Date.now();
        s.redis.resume();
      }
      await stalled;
      ctx.log(`Redis stalled for ${resumeAt - stallAt} ms`);
      c.equal('PINGs of the harness that Redis answered while stopped (the fault held)', answered, 0);
      const during = readRunLog(s.runLog);
      const stallMs = resumeAt - stallAt;
      for (const node of nodes) {
        const n = startsOf(during, 'local').filter((l) => l.inst === node.id && l.t > stallAt + 250 && l.t < resumeAt).length;
        c.atLeast(`${node.id}: instance job runs while Redis is stalled (every 250 ms)`, n, Math.floor((stallMs - 250) / 250 / 2));
      }
      // A claim goes out up to MAX_CLAIM_LEAD_MS before its tick: one answered just before the
      // stall rightly runs its tick during it. A tick due later can have been claimed only
      // during the stall, when nothing is answered.
      const inStall = startsOf(during, 'tick').concat(startsOf(during, 'work')).filter((l) => l.t > stallAt + 50 && l.t < resumeAt);
      const claimedBefore = inStall.filter((l) => l.tick < stallAt + MAX_CLAIM_LEAD_MS);
      c.equal(`runs of installation jobs that started during the stall, of ticks due ${MAX_CLAIM_LEAD_MS} ms or more after it began`, inStall.length - claimedBefore.length, 0,
        claimedBefore.length === 0 ? '' : `and ${claimedBefore.map((l) => `${l.job} of the tick due ${l.tick - stallAt} ms after it began`).join(', ')}, claimed before it`);

      const back = await waitForLog(s.runLog, (ls) => startsOf(ls, 'tick').some((l) => l.t > resumeAt), 10_000, 'a run after the stall').catch(() => readRunLog(s.runLog));
      const firstAfter = startsOf(back, 'tick').find((l) => l.t > resumeAt);
      // Claims sent during the stall reach Redis after it, past the time their nodes waited for
      // the answer: refused, they leave no lease for a tick nobody runs (one would hold the job
      // for its lease time, 3 s).
      c.add('the 1 s installation job runs again within 2.5 s of the resume', firstAfter !== undefined && firstAfter.t - resumeAt <= 2_500,
        firstAfter ? `${firstAfter.t - resumeAt} ms after` : 'no run');
      for (const node of nodes) {
        const h = await waitRedisHealthy(node, resumeAt);
        c.add(`${node.id}: /health no longer names Redis`, h.ok, h.detail);
      }
      await sleep(ctx.quick ? 3_000 : 6_000);
      const { stopAt, all } = await stopGracefully(s, c);
      const dup = duplicates(all, ['tick', 'work']);
      c.equal('ticks run twice', dup, 0);
      // The first run after the resume may be a tick of the stall run late within its grace:
      // coverage is judged from the first tick due after the resume that ran.
      const firstTickAfter = startsOf(all, 'tick').filter((l) => l.tick >= resumeAt).sort((a, b) => a.tick - b.tick)[0];
      const cov = tickCoverage(all, 'tick', [{ from: t0 + 1_000, to: stallAt - 500 }, { from: firstTickAfter?.tick ?? resumeAt + 5_000, to: stopAt - 1_000 }]);
      c.equal('ticks before the stall, and from the first run after it, that did not run', cov.notRun.length, 0);
      const lost = await compareCounts(c, s, all, ['work', 'tick', 'local'], { outages: [{ from: stallAt, to: resumeAt + 3_000 }] });
      const missed = await missedCount(s, ['tick']);
      const whole = tickCoverage(all, 'tick', [{ from: t0 + 1_000, to: stopAt - 1_000 }]);
      c.add('ticks counted missed ran on no node', missed <= whole.notRun.length, `${missed} counted missed, ${whole.notRun.length} not run (the rest were claimed by a claim that timed out)`);
      return { expected: cov.expected, done: cov.done, duplicated: dup, lostCounts: lost, missed, checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
