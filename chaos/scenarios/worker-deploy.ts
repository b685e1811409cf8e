/**
 * A deploy (SIGTERM) while a `thread: 'worker'` job is busy in its thread (CPU-bound, never
 * reading its signal): with a grace longer than what is left of the run, the run ends in its
 * thread and is recorded `succeeded`, and the node exits once it has; with a grace shorter
 * than the run, the thread is terminated after the grace and the run recorded `interrupted`,
 * never `failed`. Meanwhile the node's event loop keeps running its other jobs. Left out of
 * `npm test`: `test/tasks-worker-node.test.ts` covers the fault there.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChaosNode } from '../cluster.js';
import { Checks } from '../report.js';
import { endOf, readRunLog, startsOf, waitForLog, type RunLine } from '../runlog.js';
import { awayFromTicks, compareCounts, duplicates, missedCount, stage, stopGracefully, type Scenario } from '../scenario.js';

/** Node a: a grace longer than its run. */
const LONG_GRACE_MS = 10_000;
const SHORT_RUN_MS = 4_000;
/** Node b: a grace shorter than its run. */
const SHORT_GRACE_MS = 1_000;
const LONG_RUN_MS = 60_000;

/** The line a node logged with the outcome of its `threaded` run. */
const outcomeOf = (n: ChaosNode): Record<string, unknown> | undefined => n.proc.lines.find((l) => l['jobId'] === 'threaded' && typeof l['outcome'] === 'string');

export const workerDeploy: Scenario = {
  name: 'deploy during worker-thread runs',
  long: true,
  faults: () => `SIGTERM 1 s into a ${SHORT_RUN_MS / 1000} s run on a worker thread (grace ${LONG_GRACE_MS / 1000} s), then into a ${LONG_RUN_MS / 1000} s one (grace ${SHORT_GRACE_MS / 1000} s)`,
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'worker', ['threaded', 'tick', 'local']);
    try {
      const a = await s.cluster.start('a', 40_000, { LEASEHOLD_SHUTDOWN_GRACE: `${LONG_GRACE_MS}ms`, CHAOS_THREAD_MS: String(SHORT_RUN_MS) });
      const b = await s.cluster.start('b', 40_000, { LEASEHOLD_SHUTDOWN_GRACE: `${SHORT_GRACE_MS}ms`, CHAOS_THREAD_MS: String(LONG_RUN_MS) });
      const figures: string[] = [];
      // A .ts jobs module is compiled again in the thread: slow on a loaded machine.
      const runs = new Map<string, RunLine>();
      for (const node of [a, b]) {
        const ls = await waitForLog(s.runLog, (x) => startsOf(x, 'threaded').some((l) => l.inst === node.id), 40_000, `the threaded run on ${node.id}`);
        const run = startsOf(ls, 'threaded').find((l) => l.inst === node.id);
        if (run) runs.set(node.id, run);
      }
      const runA = runs.get('a');
      const runB = runs.get('b');
      if (!runA || !runB) throw new Error('no threaded run');

      // Node a: 1 s into its 4 s run, with a 10 s grace.
      await sleep(Math.max(0, runA.t + 1_000 - Date.now()));
      await awayFromTicks();
      let stopAt = Date.now();
      const leftA = runA.t + SHORT_RUN_MS - stopAt;
      const codeA = await s.cluster.stop(a, LONG_GRACE_MS + 10_000);
      const exitA = Date.now() - stopAt;
      figures.push(`a exited ${exitA} ms after SIGTERM (grace ${LONG_GRACE_MS} ms, ${leftA} ms of its run left)`);
      c.equal('a exits 0', codeA ?? -1, 0);
      c.add('a exits once its run has ended in the thread, not after the whole grace', exitA >= leftA - 200 && exitA <= leftA + 3_000, `${exitA} ms after SIGTERM, ${leftA} ms of the run left, grace ${LONG_GRACE_MS} ms`);
      const endA = endOf(readRunLog(s.runLog), runA);
      c.add('a\'s run ends in its thread', endA?.ev === 'end', endA ? `${endA.ev} ${endA.t - runA.t} ms after it started` : 'it never ended');
      c.equal('a\'s run is recorded succeeded', outcomeOf(a)?.['outcome'] === 'succeeded' ? 1 : 0, 1, String(outcomeOf(a)?.['outcome'] ?? 'no outcome logged'));

      // Node b: its 60 s run is busy in the thread; its event loop runs its other jobs meanwhile.
      const busyFrom = runB.t + 500;
      await sleep(Math.max(0, busyFrom + 2_000 - Date.now()));
      const localB = startsOf(readRunLog(s.runLog), 'local').filter((l) => l.inst === 'b' && l.t >= busyFrom && l.t < busyFrom + 2_000).length;
      c.atLeast('b\'s event loop runs its 250 ms instance job while the thread is busy', localB, 6, ' runs in 2 s');
      await awayFromTicks();
      stopAt = Date.now();
      const codeB = await s.cluster.stop(b, SHORT_GRACE_MS + 15_000);
      const exitB = Date.now() - stopAt;
      figures.push(`b exited ${exitB} ms after SIGTERM (grace ${SHORT_GRACE_MS} ms, ${runB.t + LONG_RUN_MS - stopAt} ms of its run left)`);
      c.equal('b exits 0', codeB ?? -1, 0);
      c.add('b\'s run has the grace, then its thread is terminated', exitB >= SHORT_GRACE_MS - 100 && exitB <= SHORT_GRACE_MS + 5_000, `exit ${exitB} ms after SIGTERM (grace ${SHORT_GRACE_MS} ms)`);
      const all0 = readRunLog(s.runLog);
      const stepsAfter = all0.filter((l) => l.job === 'threaded' && l.inst === 'b' && l.ev === 'work' && l.t > stopAt + SHORT_GRACE_MS + 1_000).length;
      c.add('b\'s run never ends in its thread, and stops working', endOf(all0, runB) === undefined && stepsAfter === 0, `${endOf(all0, runB)?.ev ?? 'no end'}, ${stepsAfter} steps from 1 s after the grace`);
      const outB = outcomeOf(b);
      const errB = JSON.stringify(outB?.['err'] ?? outB?.['error'] ?? '');
      c.add('b\'s run is recorded interrupted, not failed', outB?.['outcome'] === 'interrupted' && !/invalidTask/.test(errB), `${String(outB?.['outcome'] ?? 'no outcome logged')}${errB.length > 2 ? ` ${errB.slice(0, 120)}` : ''}`);
      for (const f of figures) ctx.log(f);

      const { all } = await stopGracefully(s, c, 'exit codes of the nodes still alive');
      const dup = duplicates(all, ['tick']);
      c.equal('ticks run twice', dup, 0);
      // The terminated run wrote no end: it is recorded interrupted.
      const lost = await compareCounts(c, s, all, ['threaded'], { unendedAs: 'interrupted' }) + (await compareCounts(c, s, all, ['tick', 'local']));
      const asked = [outcomeOf(a)?.['outcome'] === 'succeeded', outB?.['outcome'] === 'interrupted'].filter(Boolean).length;
      return { expected: 2, done: asked, duplicated: dup, lostCounts: lost, missed: await missedCount(s, ['tick']), checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
