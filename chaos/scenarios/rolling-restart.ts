/**
 * A rolling restart: each node in turn gets SIGTERM, exits, and a replacement starts, while
 * an installation job ticks every second and a long leased run is handed from node to node.
 * No tick runs twice, none is missed (other nodes are up throughout), and a stopping node
 * releases the lease of its interrupted run so the next node does not wait out its TTL.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Checks } from '../report.js';
import { readRunLog, startsOf } from '../runlog.js';
import { awayFromTicks, compareCounts, duplicates, missedCount, stage, tickCoverage, type Scenario } from '../scenario.js';

const WORK_LEASE_MS = 5_000;

export const rollingRestart: Scenario = {
  name: 'rolling restart',
  faults: () => 'SIGTERM, exit and replacement of each of 3 nodes in turn',
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'rolling', ['tick', 'work'], { env: { CHAOS_WORK_LEASE: `${WORK_LEASE_MS}ms`, CHAOS_WORK_MS: '60000' } });
    try {
      const first = ['a', 'b', 'c'];
      await Promise.all(first.map((id) => s.cluster.start(id)));
      const t0 = Date.now();
      await sleep(ctx.quick ? 1_500 : 3_000);
      for (const id of first) {
        const node = s.cluster.nodes.find((n) => n.id === id);
        if (!node) throw new Error(`no node ${id}`);
        await awayFromTicks();
        const stopAt = Date.now();
        const code = await s.cluster.stop(node);
        c.add(`${id} exits 0 on SIGTERM within the grace (1 s) plus 3 s`, code === 0 && Date.now() - stopAt <= 4_000, `code ${code}, ${Date.now() - stopAt} ms`);
        await s.cluster.start(`${id}2`);
        await sleep(ctx.quick ? 1_000 : 3_000);
      }
      await sleep(ctx.quick ? 1_500 : 3_000);
      const endAt = Date.now();
      await awayFromTicks();
      const codes = await s.cluster.stopAll();
      c.equal('exit codes of the final stops', codes.filter((x) => x !== 0).length, 0, `codes ${codes.join(',')}`);
      const all = readRunLog(s.runLog);
      const dup = duplicates(all, ['tick', 'work']);
      c.equal('ticks run twice', dup, 0);
      const cov = tickCoverage(all, 'tick', [{ from: t0 + 1_000, to: endAt - 1_000 }]);
      c.equal('ticks of the 1 s job that did not run', cov.notRun.length, 0, cov.notRun.length > 0 ? cov.notRun.map((t) => new Date(t).toISOString().slice(11, 19)).join(' ') : '');
      // A tick a node claims while it stops is counted missed, and runs nowhere, by design. The
      // restarts inside the window lose none; the final stop, on a loaded machine, may overlap a
      // tick: then what is counted missed must be ticks that really ran on no node.
      const missed = await missedCount(s, ['tick']);
      const whole = tickCoverage(all, 'tick', [{ from: t0, to: Date.now() }]);
      c.add('ticks counted missed ran on no node, and none inside the window', missed <= whole.notRun.length - cov.notRun.length, `${missed} counted missed, ${whole.notRun.length} not run from the first start to the final stop`);
      // Each interrupted run of work: the next run on another node follows within the grace of
      // the release, not after the 5 s lease.
      const interrupted = all.filter((l) => l.job === 'work' && l.ev === 'abort' && l.reason === 'shutdown' && l.t < endAt);
      for (const stop of interrupted) {
        const next = startsOf(all, 'work').find((l) => l.t > stop.t);
        c.add(`work interrupted on ${stop.inst} is taken over without waiting out its ${WORK_LEASE_MS / 1000} s lease`, next !== undefined && next.t - stop.t <= 2_500,
          next ? `${next.inst} ${next.t - stop.t} ms after` : 'no next run');
      }
      c.atLeast('leased runs handed over by the restarts', interrupted.length, 1);
      const lost = await compareCounts(c, s, all, ['tick', 'work']);
      return { expected: cov.expected, done: cov.done, duplicated: dup, lostCounts: lost, missed, checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
