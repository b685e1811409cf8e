/**
 * Redis frozen (SIGSTOP) when a node is told to stop, during its leased run: the node must exit
 * within its grace plus 5 s instead of waiting for Redis, end the run (`interrupted`, or
 * `lockLost` when its lease could not be extended first), and say once how many runs' stats
 * Redis did not acknowledge; at most those counts are lost (a batch Redis received before it
 * froze still applies when it thaws). The other node carries on once Redis answers again.
 * Left out of `npm test` (it takes about 30 s): `test/stop-stalled-redis.test.ts` covers the fault.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Checks } from '../report.js';
import { endOf, readRunLog, startsOf, waitForLog } from '../runlog.js';
import { awayFromTicks, compareCounts, duplicates, missedCount, stage, stopGracefully, tickCoverage, type Scenario } from '../scenario.js';

/** The nodes' shutdown grace (the cluster's `LEASEHOLD_SHUTDOWN_GRACE`). */
const GRACE_MS = 1_000;
/** What SPEC 3.6 allows a stop beyond the grace with a stalled Redis. */
const BEYOND_GRACE_MS = 5_000;

export const redisFrozenStop: Scenario = {
  name: 'Redis frozen at a stop',
  long: true,
  faults: () => 'SIGSTOP of redis-server, then SIGTERM to the node whose leased run is going on (grace 1 s), 2 nodes',
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'frozenstop', ['work', 'tick', 'local'], { env: { CHAOS_WORK_LEASE: '2s', CHAOS_WORK_MS: '60000' } });
    try {
      const nodes = await Promise.all(['a', 'b'].map((id) => s.cluster.start(id)));
      const t0 = Date.now();
      const lines0 = await waitForLog(s.runLog, (ls) => startsOf(ls, 'work').length > 0, 10_000, 'a run of work');
      const run = startsOf(lines0, 'work')[0];
      const holder = nodes.find((n) => n.id === run?.inst);
      if (run === undefined || holder === undefined) throw new Error('no run of work on a known node');
      await sleep(ctx.quick ? 1_000 : 3_000);
      await awayFromTicks();
      const freezeAt = Date.now();
      s.redis.pause();
      let exitMs = Infinity;
      let code: number | null = null;
      try {
        await sleep(300);
        const stopAt = Date.now();
        code = await s.cluster.stop(holder, GRACE_MS + BEYOND_GRACE_MS + 10_000);
        exitMs = Date.now() - stopAt;
      } finally {
        s.redis.resume();
      }
      const resumeAt = Date.now();
      ctx.log(`${holder.id} exited ${exitMs} ms after SIGTERM, with Redis frozen`);
      c.equal(`${holder.id} exits 0`, code ?? -1, 0);
      c.atMost(`${holder.id} exits within the grace plus 5 s of SIGTERM`, exitMs, GRACE_MS + BEYOND_GRACE_MS, ' ms');
      const ended = endOf(readRunLog(s.runLog), run);
      c.add('its leased run ends: interrupted, or lockLost when its lease could not be extended first', ended?.ev === 'abort' && (ended.reason === 'shutdown' || ended.reason === 'lockLost'), ended ? `${ended.ev} ${ended.reason ?? ''}` : 'it never ended');
      const told = holder.proc.lines.filter((l) => typeof l['unwrittenRuns'] === 'number');
      const unwritten = told.reduce((n, l) => n + Number(l['unwrittenRuns']), 0);
      c.atMost('lines about the stats it could not write', told.length, 1);

      await sleep(ctx.quick ? 7_000 : 12_000);
      const { stopAt, all } = await stopGracefully(s, c);
      const dup = duplicates(all, ['tick', 'work']);
      c.equal('ticks run twice', dup, 0);
      // After the resume, the claims sent during the freeze are answered and their leases waited out (3 s).
      const cov = tickCoverage(all, 'tick', [{ from: t0 + 1_000, to: freezeAt - 500 }, { from: resumeAt + 4_000, to: stopAt - 1_000 }]);
      c.equal('ticks before the freeze, and from 4 s after it, that did not run', cov.notRun.length, 0);
      // The runs whose stats the stopping node said it could not write may be missing; no other.
      const lost = await compareCounts(c, s, all, ['work', 'tick', 'local'], { allowedLoss: unwritten });
      const missed = await missedCount(s, ['tick']);
      ctx.log(`${unwritten} run(s) said unwritten, ${lost} missing from Redis's counters`);
      return { expected: cov.expected, done: cov.done, duplicated: dup, lostCounts: lost, missed, checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
