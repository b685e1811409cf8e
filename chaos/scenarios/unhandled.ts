/**
 * Job code that throws where nobody awaits or catches it, under `leasehold start`: each run of
 * `careless` leaves a rejection nobody handles (logged with its job and run, counted in
 * `leasehold_unhandled_errors_total{kind="rejection"}`, the node runs on and counts every run),
 * then `thrower` throws from a timer on the node that holds the long leased run: that node stops
 * as on SIGTERM (its run gets the grace and is recorded `interrupted`, its lease released so the
 * other node takes the job over at once instead of after the lease, its stats flushed) and exits
 * non-zero. Left out of `npm test`: `test/isolation-unhandled.test.ts` covers the fault there.
 * @module
 */
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { metricOf, type ChaosNode } from '../cluster.js';
import { Checks } from '../report.js';
import { endOf, readRunLog, startsOf, throwTrigger, waitForLog } from '../runlog.js';
import { awayFromTicks, compareCounts, duplicates, missedCount, stage, stopGracefully, tickCoverage, type Scenario } from '../scenario.js';

/** The nodes' shutdown grace (the cluster's `LEASEHOLD_SHUTDOWN_GRACE`). */
const GRACE_MS = 1_000;
/** The lease of `work`: a takeover that waited it out would come this long after the stop. */
const WORK_LEASE_MS = 10_000;
const JOBS = ['work', 'tick', 'local', 'careless', 'thrower'] as const;

const rejectionsLogged = (n: ChaosNode): Array<Record<string, unknown>> => n.proc.lines.filter((l) => l['kind'] === 'rejection');

export const unhandled: Scenario = {
  name: 'job code throws where nobody awaits',
  long: true,
  faults: () => 'a job leaves a rejection nobody handles at each run (2 nodes); then a job throws from a timer on the lease holder (lease 10 s, grace 1 s)',
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'unhandled', JOBS, { env: { CHAOS_WORK_LEASE: `${WORK_LEASE_MS}ms`, CHAOS_WORK_MS: '60000' } });
    try {
      const nodes = await Promise.all(['a', 'b'].map((id) => s.cluster.start(id)));
      const t0 = Date.now();
      const lines0 = await waitForLog(s.runLog, (ls) => startsOf(ls, 'work').length > 0, 10_000, 'a run of work');
      const run = startsOf(lines0, 'work')[0];
      const holder = nodes.find((n) => n.id === run?.inst);
      const other = nodes.find((n) => n.id !== run?.inst);
      if (run === undefined || holder === undefined || other === undefined) throw new Error('no run of work on a known node');
      await sleep(ctx.quick ? 3_000 : 6_000);

      // The rejections: each logged with its job and run, each counted, and the nodes run on.
      for (const node of nodes) {
        const before = rejectionsLogged(node).length;
        const counted = await metricOf(node, 'leasehold_unhandled_errors_total{kind="rejection"}');
        const after = rejectionsLogged(node);
        const runs = startsOf(readRunLog(s.runLog), 'careless').filter((l) => l.inst === node.id).length;
        const named = after.filter((l) => l['jobId'] === 'careless' && typeof l['runId'] === 'string' && l['level'] === 50).length;
        c.add(`${node.id}: each rejection is logged at error with its job and run`, after.length >= runs - 1 && named === after.length, `${after.length} logged (${named} naming job "careless" and the run), ${runs} runs of careless`);
        c.add(`${node.id}: each is counted in leasehold_unhandled_errors_total{kind="rejection"}`, counted >= before && counted <= after.length && counted > 0, `${counted} counted, ${before} to ${after.length} logged around the scrape`);
        c.equal(`${node.id}: uncaught exceptions counted so far`, await metricOf(node, 'leasehold_unhandled_errors_total{kind="exception"}'), 0);
        c.add(`${node.id} is still running`, node.proc.child.exitCode === null, `exit code ${String(node.proc.child.exitCode)}`);
      }

      // The exception, on the node that holds the leased run.
      await awayFromTicks();
      const triggerAt = Date.now();
      writeFileSync(throwTrigger(s.runLog, holder.id), '');
      const thrown = await holder.proc.waitFor((l) => l['kind'] === 'exception', 5_000);
      const thrownAt = Date.parse(String(thrown['time']));
      const { code } = await holder.proc.exited;
      const exitAt = Date.now();
      ctx.log(`${holder.id} threw ${thrownAt - triggerAt} ms after the trigger and exited ${exitAt - thrownAt} ms later with code ${String(code)}`);
      c.add('the exception is logged with the job whose code threw it', thrown['jobId'] === 'thrower' && /thrown from a timer/.test(String(thrown['msg'])), `jobId ${String(thrown['jobId'])}: ${String(thrown['msg']).slice(0, 120)}`);
      c.add(`${holder.id} exits non-zero`, code !== 0 && code !== null, `exit code ${String(code)}`);
      c.atMost(`${holder.id} exits within the grace plus 3 s of the exception`, exitAt - thrownAt, GRACE_MS + 3_000, ' ms');
      const all0 = readRunLog(s.runLog);
      const ended = endOf(all0, run);
      c.add('its leased run had the grace, and ended interrupted', ended?.ev === 'abort' && ended.reason === 'shutdown' && ended.t - thrownAt >= GRACE_MS - 100,
        ended ? `${ended.ev} ${ended.reason ?? ''}, ${ended.t - thrownAt} ms after the exception` : 'it never ended');
      const recorded = holder.proc.lines.find((l) => l['jobId'] === 'work' && typeof l['outcome'] === 'string');
      c.add('the node recorded it interrupted', recorded?.['outcome'] === 'interrupted', String(recorded?.['outcome'] ?? 'no outcome logged'));
      const lines = await waitForLog(s.runLog, (ls) => startsOf(ls, 'work').some((l) => l.t > exitAt - 1_000 && l.inst === other.id), WORK_LEASE_MS + 3_000, 'the takeover').catch(() => readRunLog(s.runLog));
      const takeover = startsOf(lines, 'work').find((l) => l.inst === other.id && ended !== undefined && l.t > ended.t);
      const from = ended?.t ?? exitAt;
      c.add(`its lease was released: ${other.id} takes the job over at its next tick, not after the ${WORK_LEASE_MS / 1000} s lease`, takeover !== undefined && takeover.t - from <= 2_500,
        takeover ? `${takeover.t - from} ms after the run ended` : 'no takeover');

      await sleep(ctx.quick ? 3_000 : 6_000);
      const { stopAt, all } = await stopGracefully(s, c, `exit code of ${other.id}'s graceful stop`);
      const dup = duplicates(all, ['tick', 'work']);
      c.equal('ticks run twice', dup, 0);
      const cov = tickCoverage(all, 'tick', [{ from: t0 + 1_000, to: thrownAt - 500 }, { from: exitAt + 1_000, to: stopAt - 1_000 }]);
      c.equal('ticks of the 1 s job that did not run (but across the stop)', cov.notRun.length, 0, cov.notRun.map((t) => new Date(t).toISOString().slice(11, 19)).join(' '));
      // The stopped node flushed: every run of every job, its own included, is counted.
      const lost = await compareCounts(c, s, all, JOBS);
      return { expected: cov.expected + 1, done: cov.done + (takeover ? 1 : 0), duplicated: dup, lostCounts: lost, missed: await missedCount(s, ['tick']), checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
