/**
 * Redis absent when the nodes start: they start anyway, say on `/health` (503) that Redis
 * is unreachable, run their instance jobs, retry the connection with backoff, and work as
 * soon as Redis appears; what they counted meanwhile reaches Redis.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { getJson, healthNamesRedis, waitRedisHealthy, type ChaosNode } from '../cluster.js';
import { Checks } from '../report.js';
import { readRunLog, startsOf, waitForLog } from '../runlog.js';
import { stopGracefully, compareCounts, duplicates, missedCount, stage, tickCoverage, type Scenario } from '../scenario.js';

/** Times of the lease connection's failed attempts, from a node's debug log. */
function attempts(node: ChaosNode, until: number): number[] {
  return node.proc.lines
    .filter((l) => l['connection'] === 'lease' && String(l['msg']).endsWith('error; reconnecting'))
    .map((l) => (typeof l['time'] === 'number' ? l['time'] : Date.parse(String(l['time']))))
    .filter((t) => Number.isFinite(t) && t <= until);
}

export const redisAbsent: Scenario = {
  name: 'Redis absent at start',
  faults: (quick) => `2 nodes start with no Redis; redis-server started ${quick ? 1.5 : 4} s after they are up`,
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'absent', ['tick', 'local']);
    try {
      await s.redis.kill();
      const t0 = Date.now();
      const nodes = await Promise.all(['a', 'b'].map((id) => s.cluster.start(id, 20_000)));
      c.atMost('the nodes start without Redis', Date.now() - t0, 10_000, ' ms');
      for (const node of nodes) {
        const h = await getJson(node, '/health');
        c.add(`${node.id}: /health is 503 naming Redis`, h.status === 503 && healthNamesRedis(h), `${h.status} ${JSON.stringify(h.body).slice(0, 160)}`);
      }
      await sleep(ctx.quick ? 1_500 : 4_000);
      const appearedAt = Date.now();
      for (const node of nodes) {
        const localRuns = startsOf(readRunLog(s.runLog), 'local').filter((l) => l.inst === node.id).length;
        c.atLeast(`${node.id}: instance job runs while Redis is absent (every 250 ms)`, localRuns, ctx.quick ? 3 : 8);
        const times = attempts(node, appearedAt);
        const gaps = times.slice(1).map((t, i) => t - (times[i] ?? t));
        const last = gaps.at(-1) ?? 0;
        // The cap is 2 s; without it the next gap would be 3.2 s. The slack above 2 s is the
        // event loop of a node still busy starting on a loaded 2-core machine.
        c.add(`${node.id}: reconnects with backoff (attempts farther apart, at most 2 s)`, times.length >= 3 && last >= 700 && last <= 2_900 && times.length <= (appearedAt - t0) / 100,
          `${times.length} attempts, gaps ${gaps.slice(0, 4).join(', ')}${gaps.length > 6 ? ', ..., ' : ', '}${gaps.slice(Math.max(4, gaps.length - 2)).join(', ')} ms`);
      }
      await s.redis.restart();
      ctx.log(`redis-server started ${appearedAt - t0} ms after the nodes`);
      for (const node of nodes) {
        const h = await waitRedisHealthy(node, appearedAt, 15_000);
        c.add(`${node.id}: /health no longer names Redis once it is there`, h.ok, h.detail);
      }
      const first = await waitForLog(s.runLog, (ls) => startsOf(ls, 'tick').some((l) => l.t >= appearedAt), 10_000, 'a claimed run').catch(() => readRunLog(s.runLog));
      const firstRun = startsOf(first, 'tick').find((l) => l.t >= appearedAt);
      c.add('the installation job runs soon after Redis appears', firstRun !== undefined && firstRun.t - appearedAt <= 4_000,
        firstRun ? `${firstRun.t - appearedAt} ms after (reconnection backoff at most 2 s, then the next tick)` : 'never');
      await sleep(ctx.quick ? 3_000 : 6_000);
      const { stopAt, all } = await stopGracefully(s, c);
      // From the first run after Redis appeared (checked above to come soon), every tick runs.
      const cov = tickCoverage(all, 'tick', [{ from: firstRun?.tick ?? appearedAt + 4_000, to: stopAt - 1_000 }]);
      c.equal('ticks after the recovery that did not run', cov.notRun.length, 0);
      const dup = duplicates(all, ['tick']);
      c.equal('ticks run twice', dup, 0);
      const lost = await compareCounts(c, s, all, ['tick', 'local']);
      return { expected: cov.expected, done: cov.done, duplicated: dup, lostCounts: lost, missed: await missedCount(s, ['tick']), checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
