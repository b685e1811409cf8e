/**
 * A node's wall clock stepped while it runs (an NTP correction, a VM resumed): node a runs
 * under libfaketime with a time file, stepped back an hour and later forward again, while b
 * and c keep the true time and Redis's clock is unchanged. A node schedules on Redis time
 * read off its monotonic clock, so every tick of the 1 s installation job runs once, node a
 * keeps taking part, its instance job keeps its pace, and each step is logged once.
 * @module
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Checks } from '../report.js';
import { startsOf } from '../runlog.js';
import { compareCounts, duplicates, missedCount, stage, stopGracefully, tickCoverage, type Scenario } from '../scenario.js';

const FAKETIME_LIB = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1'].find((p) => existsSync(p));

export const clockStep: Scenario = {
  name: 'wall clock stepped',
  faults: (quick) => `node a's wall clock (libfaketime) stepped back 1 h, then ${quick ? 4 : 8} s later forward to 1 h ahead`,
  async run(ctx) {
    const c = new Checks();
    if (!FAKETIME_LIB) throw new Error('libfaketime is not installed (Debian package faketime)');
    const s = await stage(ctx, 'clock', ['tick', 'local']);
    const timeFile = join(ctx.dir, `${s.prefix}.faketime`);
    writeFileSync(timeFile, '+0\n');
    try {
      const preload = { LD_PRELOAD: FAKETIME_LIB, FAKETIME_TIMESTAMP_FILE: timeFile, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' };
      const a = await s.cluster.start('a', 20_000, preload);
      await Promise.all(['b', 'c'].map((id) => s.cluster.start(id)));
      const t0 = Date.now();
      await sleep(ctx.quick ? 3_000 : 5_000);
      writeFileSync(timeFile, '-1h\n');
      ctx.log('stepped a back an hour');
      await sleep(ctx.quick ? 4_000 : 8_000);
      writeFileSync(timeFile, '+1h\n');
      ctx.log('stepped a forward two hours (an hour ahead)');
      await sleep(ctx.quick ? 4_000 : 8_000);
      const { stopAt, all } = await stopGracefully(s, c);

      const dup = duplicates(all, ['tick']);
      c.equal('ticks run twice', dup, 0);
      const cov = tickCoverage(all, 'tick', [{ from: t0 + 1_000, to: stopAt - 1_000 }]);
      c.equal('ticks of the 1 s job that did not run, across both steps', cov.notRun.length, 0);
      const byA = startsOf(all, 'tick').filter((l) => l.inst === 'a').length;
      c.atLeast('ticks node a ran (it keeps taking part)', byA, 1);
      const local = startsOf(all, 'local').filter((l) => l.inst === 'a').length;
      const expectedLocal = Math.floor((stopAt - t0) / 250);
      c.atLeast('runs of node a\'s 250 ms instance job, against the elapsed time', local, Math.floor(expectedLocal * 0.8), ` of ${expectedLocal}`);
      const steps = a.proc.lines.filter((l) => /wall clock stepped/.test(String(l['msg'])));
      c.equal('steps logged by node a', steps.length, 2, steps.map((l) => String(l['msg'])).join(' | '));
      const lost = await compareCounts(c, s, all, ['tick']);
      return { expected: cov.expected, done: cov.done, duplicated: dup, lostCounts: lost, missed: await missedCount(s, ['tick']), checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
