/**
 * Keys of two jobs damaged while they run on 2 nodes (an operator's `SET` on the wrong key,
 * another program sharing the prefix): the claim state of the installation job `tick` and the
 * recent-runs list of the instance job `local` turned into strings. Only those jobs are hurt:
 * `tick`'s claims fail with `corruptState` naming its key (said once per node), `local` runs on
 * but none of its counters moves (its batches are dropped and counted in
 * `leasehold_stats_batches_dropped_total`), and `work` runs and counts as if nothing happened.
 * After `DEL` of both keys, both jobs run and count again. Left out of `npm test`:
 * `test/corrupt-keys.test.ts` covers each of a job's keys there.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { metricOf, readCounters, type ChaosNode } from '../cluster.js';
import { Checks } from '../report.js';
import { readRunLog, startsOf, waitForLog } from '../runlog.js';
import { compareCounts, duplicates, missedCount, stage, stopGracefully, tickCoverage, type Scenario } from '../scenario.js';

const JOBS = ['tick', 'work', 'local'] as const;

/** What a node logged at warn or above naming `key`. */
const saidOf = (n: ChaosNode, key: string): Array<Record<string, unknown>> => n.proc.lines.filter((l) => Number(l['level']) >= 40 && JSON.stringify(l).includes(key));

export const corruptKeys: Scenario = {
  name: 'a job\'s keys corrupted',
  long: true,
  faults: (quick) => `SET of tick's claim state and of local's recent runs to a string for ${quick ? 5 : 10} s, then DEL; 3 jobs on 2 nodes`,
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'corrupt', JOBS, { env: { CHAOS_WORK_MS: '300' } });
    const stateKey = `${s.prefix}:{tick}:state`;
    const runsKey = `${s.prefix}:{local}:runs`;
    try {
      const nodes = await Promise.all(['a', 'b'].map((id) => s.cluster.start(id)));
      const t0 = Date.now();
      await waitForLog(s.runLog, (ls) => JOBS.every((j) => startsOf(ls, j).length > 0), 10_000, 'a run of every job');
      await sleep(ctx.quick ? 2_000 : 4_000);
      await s.client.set(stateKey, 'garbage');
      await s.client.del(runsKey);
      await s.client.set(runsKey, 'garbage');
      const damageAt = Date.now();
      ctx.log(`damaged ${stateKey} and ${runsKey}`);
      await sleep(1_500);
      const localStill = await readCounters(s.client, s.prefix, 'local');
      const tickStill = await readCounters(s.client, s.prefix, 'tick');
      await sleep(ctx.quick ? 3_500 : 8_500);
      const localLater = await readCounters(s.client, s.prefix, 'local');
      const tickLater = await readCounters(s.client, s.prefix, 'tick');
      const dropped = async (job: string): Promise<number> => (await Promise.all(nodes.map((n) => metricOf(n, `leasehold_stats_batches_dropped_total{job="${job}"}`)))).reduce((a, b) => a + b, 0);
      const droppedLocal = await dropped('local');
      const droppedTick = await dropped('tick');
      const droppedWork = await dropped('work');
      await s.client.del(stateKey, runsKey);
      const repairAt = Date.now();
      ctx.log('repaired both keys (DEL)');
      const during = readRunLog(s.runLog);
      const inDamage = (l: { t: number }): boolean => l.t > damageAt + 500 && l.t < repairAt;

      // tick: its claims fail, each naming the key; the failing streak is said once in the cluster, with the code and the repair.
      const fails = nodes.flatMap((n) => n.proc.lines.filter((l) => l['jobId'] === 'tick' && l['outcome'] === 'failed' && l['level'] === 20));
      const named = fails.filter((l) => String(l['error']).includes(stateKey)).length;
      c.add('tick\'s claims fail, each naming its damaged key', fails.length > 0 && named === fails.length, `${fails.length} failed claims on the 2 nodes, ${named} naming ${stateKey}`);
      c.equal('runs of tick started while its state was damaged', startsOf(during, 'tick').filter(inDamage).length, 0);
      const streak = nodes.flatMap((n) => n.proc.lines.filter((l) => l['jobId'] === 'tick' && l['level'] === 40 && /^job "tick" failed/.test(String(l['msg']))));
      const code = (streak[0]?.['err'] as { code?: unknown } | undefined)?.code;
      c.add('the failure is said once in the cluster, at warn, with corruptState and the repair', streak.length === 1 && code === 'corruptState' && /DEL/.test(String(streak[0]?.['msg'])),
        streak.length === 0 ? 'not said' : `${streak.length} time(s), code ${String(code)}: ${String(streak[0]?.['msg']).slice(0, 150)}`);
      const tickMoved = ['succeeded', 'lockLost', 'interrupted', 'lost'].filter((f) => tickStill[f] !== tickLater[f]);
      c.add('no counter of tick but its failed claims moves meanwhile', tickMoved.length === 0, `succeeded ${tickStill['succeeded'] ?? 0} -> ${tickLater['succeeded'] ?? 0}, failed ${tickStill['failed'] ?? 0} -> ${tickLater['failed'] ?? 0}`);
      // local: it runs on, its counters stay still, its batches are dropped and counted.
      const localRuns = startsOf(during, 'local').filter(inDamage).length;
      c.atLeast('runs of local while its recent runs were damaged (it runs on)', localRuns, 10);
      const moved = ['runs', 'succeeded', 'failed'].filter((f) => localStill[f] !== localLater[f]);
      c.add('no counter of local moves meanwhile', moved.length === 0, `runs ${localStill['runs'] ?? 0} -> ${localLater['runs'] ?? 0} over ${((repairAt - damageAt - 1_500) / 1000).toFixed(1)} s`);
      c.atLeast('its batches dropped, in leasehold_stats_batches_dropped_total{job="local"} (both nodes)', droppedLocal, 1);
      c.equal('batches of work dropped', droppedWork, 0);
      for (const n of nodes) {
        const said = saidOf(n, runsKey);
        c.atMost(`${n.id}: lines naming the damaged recent runs`, said.length, 1);
      }
      // work: untouched.
      c.atLeast('runs of work while the others were damaged', startsOf(during, 'work').filter(inDamage).length, Math.floor((repairAt - damageAt) / 1000) - 2);

      // Repaired: both run and count again.
      await sleep(ctx.quick ? 4_000 : 8_000);
      const { stopAt, all } = await stopGracefully(s, c);
      const tickAgain = startsOf(all, 'tick').find((l) => l.t > repairAt);
      c.add('tick runs again after the repair', tickAgain !== undefined && tickAgain.t - repairAt <= 2_000, tickAgain ? `${tickAgain.t - repairAt} ms after the DEL` : 'it did not');
      const localAfter = await readCounters(s.client, s.prefix, 'local');
      const endedAfter = all.filter((l) => l.job === 'local' && l.ev === 'end' && l.t > repairAt + 1_000).length;
      const endedSince = all.filter((l) => l.job === 'local' && l.ev === 'end' && l.t > damageAt).length;
      const counted = (localAfter['runs'] ?? 0) - (localLater['runs'] ?? 0);
      c.add('local counts again: every run from 1 s after the repair, none more than ran', counted >= endedAfter && counted <= endedSince, `${counted} counted since the repair, ${endedAfter} ended from 1 s after it, ${endedSince} since the damage`);
      const dup = duplicates(all, ['tick', 'work']);
      c.equal('ticks run twice', dup, 0);
      const cov = tickCoverage(all, 'tick', [{ from: t0 + 1_000, to: damageAt - 500 }, { from: repairAt + 2_000, to: stopAt - 1_000 }]);
      c.equal('ticks of tick outside the damage that did not run', cov.notRun.length, 0);
      // tick's failed claims are counted failed runs. A run of tick that ended as its state was
      // damaged has a batch that cannot apply (its record checks the state): dropped, counted.
      const atDamage = all.filter((l) => l.job === 'tick' && (l.ev === 'end' || l.ev === 'abort') && l.t > damageAt - 1_000 && l.t < repairAt).length;
      const lostWork = await compareCounts(c, s, all, ['work']);
      const lostTick = await compareCounts(c, s, all, ['tick'], { allowedLoss: Math.min(atDamage, droppedTick) });
      const tickCounters = await readCounters(s.client, s.prefix, 'tick');
      const uniqueFails = new Set(fails.map((l) => `${String(l['pid'])}/${String(l['runId'])}`)).size;
      c.equal('tick\'s failed runs in Redis: its failed claims', tickCounters['failed'] ?? 0, uniqueFails, `${droppedTick} batch(es) of tick dropped, ${atDamage} run(s) of it ended within 1 s before the damage`);
      ctx.log(`tick: ${uniqueFails} failed claims, ${droppedTick} batches dropped; local: ${droppedLocal} batches dropped, ${localRuns} runs during the damage`);
      const lost = lostWork + lostTick;
      return { expected: cov.expected, done: cov.done, duplicated: dup, lostCounts: lost, missed: await missedCount(s, ['tick']), checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
