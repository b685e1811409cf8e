/**
 * A node frozen (SIGSTOP, like a long GC pause or a suspended VM) for longer than its
 * lease, in the middle of a leased run. Another node takes the job over once the lease has
 * run out; when the frozen node wakes (SIGCONT), its run must be aborted as `lockLost`
 * before it does any more work, so the two runs overlap only while the first was frozen. The
 * frozen run is recorded once: lost by the claim that took over, its own record refused.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { keys } from '../../src/redis/keys.js';
import { MAX_CLAIM_LEAD_MS } from '../../src/runner/leads.js';
import { Checks } from '../report.js';
import { readRunLog, startsOf, waitForLog, endOf } from '../runlog.js';
import { stopGracefully, compareCounts, duplicates, missedCount, recentRuns, stage, tickCoverage, type Scenario } from '../scenario.js';

const LEASE_MS = 2_000;

export const nodeFreeze: Scenario = {
  name: 'node frozen past its lease',
  faults: (quick) => `SIGSTOP of the lease holder for ${quick ? 4 : 6} s (lease 2 s), then SIGCONT`,
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'freeze', ['work', 'tick'], { env: { CHAOS_WORK_LEASE: `${LEASE_MS}ms`, CHAOS_WORK_MS: '60000' } });
    try {
      const ids = ['a', 'b', 'c'];
      await Promise.all(ids.map((id) => s.cluster.start(id)));
      const t0 = Date.now();
      const first = (await waitForLog(s.runLog, (ls) => startsOf(ls, 'work').length > 0, 10_000, 'a run of work')).find((l) => l.job === 'work' && l.ev === 'start');
      if (first === undefined) throw new Error('no run of work');
      const victim = s.cluster.nodes.find((n) => n.id === first.inst);
      if (victim === undefined) throw new Error(`no node ${first.inst}`);
      // Just after one of the holder's extensions (every 1 s of the run): its watcher next
      // wakes a second later, while the job's next step is due within 100 ms. Which of the two
      // runs first on waking decides whether the job does work it no longer holds the lease for.
      // The watcher counts from when its claim was sent, up to MAX_CLAIM_LEAD_MS before the tick
      // the run starts at (more the slower Redis answers): the extension is seen in Redis, as
      // the lease's time to live going back up, rather than guessed from the run's start.
      const leaseKey = keys(s.prefix).lease('work');
      const planned = first.t + (ctx.quick ? 1_000 : 4_000);
      const extendedAt = await nextExtension(s.client, leaseKey, planned - MAX_CLAIM_LEAD_MS - 100, planned + 200);
      s.cluster.freeze(victim);
      const frozenAt = Date.now();
      // What is left of the lease at the freeze: no one can claim the job before it runs out.
      const askedAt = Date.now();
      const leaseLeft = (await s.client.pttl(leaseKey)) + askedAt - frozenAt;
      ctx.log(`froze ${victim.id} ${frozenAt - first.t} ms into its run, ${extendedAt === undefined ? 'no extension seen' : `${frozenAt - extendedAt} ms after an extension`}, ${leaseLeft} ms of lease left`);
      const taken = await waitForLog(s.runLog, (ls) => startsOf(ls, 'work').some((l) => l.t > frozenAt), LEASE_MS + 4_000, 'a takeover').catch(() => readRunLog(s.runLog));
      const takeover = startsOf(taken, 'work').find((l) => l.t > frozenAt);
      await sleep(Math.max(0, (ctx.quick ? 4_000 : 6_000) - (Date.now() - frozenAt)));
      const wokeAt = Date.now();
      s.cluster.thaw(victim);
      ctx.log(`woke ${victim.id} after ${wokeAt - frozenAt} ms`);
      await waitForLog(s.runLog, (ls) => endOf(ls, first) !== undefined, 5_000, 'the end of the frozen run').catch(() => undefined);
      await sleep(ctx.quick ? 1_500 : 8_000);
      const { stopAt, all } = await stopGracefully(s, c);

      c.add('another node takes the job over while the holder is frozen', takeover !== undefined && takeover.inst !== victim.id,
        takeover ? `${takeover.inst} started ${takeover.t - frozenAt} ms after the freeze` : 'no takeover');
      if (takeover) {
        c.atLeast(`the takeover waits until the frozen holder's lease has run out (${leaseLeft} ms left at the freeze)`, takeover.t - frozenAt, leaseLeft - 5, ' ms');
        c.atMost('the takeover comes within one lease time plus one interval', takeover.t - frozenAt, LEASE_MS + 1_000 + 500, ' ms');
      }
      const ended = endOf(all, first);
      c.add('the woken run ends as lockLost', ended?.ev === 'abort' && ended.reason === 'lockLost', ended ? `${ended.ev} ${ended.reason ?? ''}` : 'never ended');
      if (ended && takeover) {
        c.atMost('the two runs overlap only while the first is frozen: its abort comes right at the wake-up', ended.t - wokeAt, 500,
          ` ms (they overlapped ${ended.t - takeover.t} ms in all)`);
      }
      const after = all.filter((l) => l.job === 'work' && l.ev === 'work' && l.inst === victim.id && l.tick === first.tick && l.t >= wokeAt);
      c.equal('steps of work the woken run did after waking, while another node held the lease', after.length, 0,
        after.length > 0 ? `the first ${(after[0]?.t ?? wokeAt) - wokeAt} ms after SIGCONT, before its signal was aborted` : 'its signal was aborted first');

      const records = (await recentRuns(s, 'work')).filter((r) => r.fencingToken === first.token);
      c.add('the frozen run is recorded once: lost by the claim that took over, or lockLost by the woken node, never both',
        records.length === 1 && (takeover ? records[0]?.outcome === 'lost' : records[0]?.outcome === 'lost' || records[0]?.outcome === 'lockLost'), records.map((r) => r.outcome).join(', ') || `no record of token ${String(first.token)}`);

      const dup = duplicates(all, ['work', 'tick']);
      c.equal('ticks run twice', dup, 0);
      // The frozen node may hold the tick job's lease (3 s) when frozen: that stretch is left out.
      const cov = tickCoverage(all, 'tick', [{ from: t0 + 1_000, to: frozenAt - 500 }, { from: wokeAt + 4_000, to: stopAt - 1_000 }]);
      c.equal('ticks of the 1 s job outside the freeze that did not run', cov.notRun.length, 0);
      const lost = await compareCounts(c, s, all, ['work', 'tick']);
      return { expected: cov.expected + 1, done: cov.done + (takeover ? 1 : 0), duplicated: dup, lostCounts: lost, missed: await missedCount(s, ['tick']), checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};

/**
 * Waits from `from` (a time) for the lease at `key` to be extended, seen as its time to live
 * going back up, until `until`; returns when it was seen, or undefined if it was not.
 */
async function nextExtension(client: Redis, key: string, from: number, until: number): Promise<number | undefined> {
  await sleep(Math.max(0, from - Date.now()));
  let last = await client.pttl(key);
  while (Date.now() < until) {
    await sleep(5);
    const pttl = await client.pttl(key);
    if (pttl > last + 100) return Date.now();
    last = pttl;
  }
  return undefined;
}
