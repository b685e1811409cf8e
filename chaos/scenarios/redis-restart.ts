/**
 * Redis killed (SIGKILL) and started again with its append-only file: the nodes reconnect,
 * no tick runs twice (the claims survived), and every run is counted exactly once.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { waitRedisHealthy } from '../cluster.js';
import { Checks } from '../report.js';
import { readRunLog, startsOf, waitForLog } from '../runlog.js';
import { stopGracefully, compareCounts, duplicates, missedCount, recentRuns, stage, tickCoverage, type Scenario, type Window } from '../scenario.js';

export const redisRestart: Scenario = {
  name: 'Redis killed and restarted',
  faults: (quick) => (quick ? 'kill -9 of redis-server (AOF on), down 3 s, 2 nodes' : '2 x kill -9 of redis-server (AOF on), down 4 s each, 3 nodes'),
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'restart', ['tick', 'local'], { appendonly: true });
    try {
      const nodes = await Promise.all((ctx.quick ? ['a', 'b'] : ['a', 'b', 'c']).map((id) => s.cluster.start(id)));
      const t0 = Date.now();
      const up: Window[] = [];
      // Until a node has reconnected (its backoff is at most 2 s), its releases fail too.
      const down: Window[] = [];
      let from = t0 + 1_000;
      for (let round = 1; round <= (ctx.quick ? 1 : 2); round++) {
        await sleep(3_000);
        const killAt = Date.now();
        await s.redis.kill();
        up.push({ from, to: killAt - 500 });
        await sleep(ctx.quick ? 3_000 : 4_000);
        await s.redis.restart();
        const restartAt = Date.now();
        down.push({ from: killAt, to: restartAt + 3_000 });
        ctx.log(`Redis down ${restartAt - killAt} ms`);
        const lines = await waitForLog(s.runLog, (ls) => startsOf(ls, 'tick').some((l) => l.t > restartAt), 10_000, 'a run after the restart').catch(() => readRunLog(s.runLog));
        const firstAfter = startsOf(lines, 'tick').find((l) => l.t > restartAt);
        c.add(`restart ${round}: the installation job runs again within 4 s (reconnection backoff at most 2 s)`, firstAfter !== undefined && firstAfter.t - restartAt <= 4_000,
          firstAfter ? `${firstAfter.t - restartAt} ms after` : 'no run');
        from = firstAfter?.tick ?? restartAt + 4_000;
        for (const node of nodes) {
          const h = await waitRedisHealthy(node, restartAt);
          c.add(`restart ${round}: ${node.id} reconnects (/health no longer names Redis)`, h.ok, h.detail);
        }
      }
      await sleep(ctx.quick ? 3_000 : 5_000);
      const { stopAt, all } = await stopGracefully(s, c);
      up.push({ from, to: stopAt - 1_000 });
      const dup = duplicates(all, ['tick']);
      c.equal('ticks run twice', dup, 0);
      const cov = tickCoverage(all, 'tick', up);
      c.equal('ticks while Redis was up (from the first run after a restart) that did not run', cov.notRun.length, 0);
      const lost = await compareCounts(c, s, all, ['tick', 'local'], { outages: down });
      const missed = await missedCount(s, ['tick']);
      const whole = tickCoverage(all, 'tick', [{ from: startsOf(all, 'tick')[0]?.tick ?? t0, to: stopAt - 1_000 }]);
      // The job never fails by itself: its failed runs are claims that Redis did not answer. A
      // tick whose first claimer's failed claim was recorded before its backup claimed and ran
      // it counts both, the run and the failed claim: each is what a node did.
      const failedTicks = (await recentRuns(s, 'tick')).filter((r) => r.outcome === 'failed').map((r) => Date.parse(r.scheduledAt));
      const lostTicks = new Set(whole.notRun);
      const failedLost = failedTicks.filter((t) => lostTicks.has(t));
      // Each lost tick is counted once: a failed run when a node's record of its claim reached
      // Redis before the next claim, missed otherwise; never both, and never once per node that tried.
      const counted = missed + failedLost.length;
      c.add('each tick lost to the outages is counted once, missed or a failed claim', new Set(failedTicks).size === failedTicks.length && counted <= whole.notRun.length && whole.notRun.length - counted <= (ctx.quick ? 1 : 2),
        `${missed} counted missed and ${failedLost.length} failed claims, ${whole.notRun.length} not run; ${failedTicks.length - failedLost.length} failed claims of ticks that ran on another node`);
      return { expected: cov.expected, done: cov.done, duplicated: dup, lostCounts: lost, missed, checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
