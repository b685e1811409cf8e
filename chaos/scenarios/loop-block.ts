/**
 * A job that blocks the event loop longer than its lease (2.5 s of CPU, lease 1 s): no timer
 * of that node can run, the lease watcher included. The run is recorded `lockLost` with a
 * warning that names the job; other nodes go on; the blocked node does not burst after.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Checks } from '../report.js';
import { endOf, readRunLog, startsOf, waitForLog } from '../runlog.js';
import { stopGracefully, compareCounts, duplicates, stage, type Scenario } from '../scenario.js';

const BLOCK_MS = 2_500;

export const loopBlock: Scenario = {
  name: 'event loop blocked past the lease',
  faults: () => `a job holds the event loop ${BLOCK_MS / 1000} s (lease 1 s), 2 nodes`,
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'block', ['blocker', 'local'], { env: { CHAOS_BLOCK_MS: String(BLOCK_MS) } });
    try {
      const nodes = await Promise.all(['a', 'b'].map((id) => s.cluster.start(id)));
      const lines = await waitForLog(s.runLog, (ls) => ls.some((l) => l.job === 'blocker' && l.ev === 'end'), 15_000, 'the blocking run');
      const run = startsOf(lines, 'blocker')[0];
      const end = run ? endOf(lines, run) : undefined;
      const blocked = nodes.find((n) => n.id === run?.inst);
      const other = nodes.find((n) => n.id !== run?.inst);
      if (!run || !end || !blocked || !other) throw new Error('no blocking run');
      const outcome = await blocked.proc.waitFor((l) => l['jobId'] === 'blocker' && typeof l['outcome'] === 'string', 5_000).catch(() => undefined);
      c.add('the run is recorded lockLost', outcome?.['outcome'] === 'lockLost', String(outcome?.['outcome'] ?? 'no outcome logged'));
      const warning = await blocked.proc.waitFor((l) => l['jobId'] === 'blocker' && /blocked the event loop/.test(String(l['msg'])), 2_000).catch(() => undefined);
      const msg = String(warning?.['msg'] ?? '');
      c.add('a warning names the job and the remedy', /job "blocker"/.test(msg) && /worker thread/.test(msg), msg === '' ? 'no warning' : `${String(warning?.['level'] ?? '')}: ${msg.slice(0, 140)}...`);
      const otherRuns = startsOf(lines, 'local').filter((l) => l.inst === other.id && l.t > run.t + 250 && l.t < end.t).length;
      c.atLeast(`${other.id} (not blocked) keeps running its instance job`, otherRuns, Math.floor((end.t - run.t - 250) / 250 / 2));
      await sleep(1_500);
      const after = readRunLog(s.runLog);
      // Ten starts of it fell in the block: one late run, then its grid again, no catching up.
      const burst = startsOf(after, 'local').filter((l) => l.inst === blocked.id && l.t >= end.t && l.t < end.t + 500).length;
      c.atMost(`${blocked.id}: no burst of its 250 ms instance job after the block`, burst, 3, ' runs in the first 500 ms');
      const { all } = await stopGracefully(s, c);
      const dup = duplicates(all, ['blocker']);
      c.equal('ticks run twice', dup, 0);
      const lost = await compareCounts(c, s, all, ['blocker', 'local']);
      return { expected: 1, done: startsOf(all, 'blocker').length, duplicated: dup, lostCounts: lost, missed: 0, checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
