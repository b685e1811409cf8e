/**
 * Status-page event-stream clients that never read, against a node of 200 jobs: 300 real TCP
 * clients send `GET /manage/events` and never read a byte. The node serves at most
 * `LEASEHOLD_EVENTS_MAX_CLIENTS` (100) and answers 503 beyond it, closes the stuck streams
 * within 30 s, grows by at most 50 MB, and its jobs keep running and counting. The approach of
 * `test/http-events-slow.test.ts` (its helpers are shared), with the chaos jobs' run log beside.
 * Linux: the node's memory and sockets are read from `/proc`. Left out of `npm test`: that
 * test covers the fault there.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { deafClient, followPeakRss, getText, sockets, warmBaseline } from '../../test/helpers/deaf-clients.js';
import { metricOf, portOf } from '../cluster.js';
import { Checks } from '../report.js';
import { compareCounts, duplicates, missedCount, stage, stopGracefully, tickCoverage, type Scenario } from '../scenario.js';

const CLIENTS = 300;
const MAX_CLIENTS = 100;
const CLOSED_WITHIN_MS = 30_000;
const GROWTH_MB = 50;

export const slowEvents: Scenario = {
  name: 'slow event-stream clients',
  long: true,
  faults: () => `${CLIENTS} clients of GET /manage/events that never read, against a node of 200 jobs (cap ${MAX_CLIENTS})`,
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'events', ['many', 'tick', 'local'], { env: { LOG_LEVEL: 'info', LEASEHOLD_EVENTS_MAX_CLIENTS: String(MAX_CLIENTS) } });
    try {
      const node = await s.cluster.start('a', 40_000);
      const pid = node.proc.child.pid;
      if (pid === undefined) throw new Error('no pid');
      const port = portOf(node);
      const t0 = Date.now();
      const { baseRss, warmMs } = await warmBaseline(pid, port, ctx.quick ? 5_000 : 15_000);
      ctx.log(`warm after ${Math.round(warmMs / 1000)} s: ${(baseRss / 2 ** 20).toFixed(0)} MB`);
      const baseSockets = sockets(pid);

      const clients = await Promise.all(Array.from({ length: CLIENTS }, () => deafClient(port)));
      const connectedAt = Date.now();
      const peak = followPeakRss(pid, baseRss);
      let peakRss = baseRss;
      let closedMs = Infinity;
      let refusedMs = Infinity;
      try {
        const over = CLIENTS - MAX_CLIENTS;
        while (Date.now() - connectedAt < 20_000) {
          if (sockets(pid) <= baseSockets + MAX_CLIENTS && (await metricOf(node, 'leasehold_events_clients_dropped_total{reason="maxClients"}')) >= over) {
            refusedMs = Date.now() - connectedAt;
            break;
          }
          await sleep(100);
        }
        c.add(`the ${over} over the cap are refused and their connections closed`, refusedMs < Infinity, refusedMs < Infinity ? `within ${refusedMs} ms` : `${await metricOf(node, 'leasehold_events_clients_dropped_total{reason="maxClients"}')} refused after 20 s`);
        const probe = await getText(port, '/manage/events');
        c.add('one more is answered 503, naming LEASEHOLD_EVENTS_MAX_CLIENTS', probe.status === 503 && /LEASEHOLD_EVENTS_MAX_CLIENTS/.test(probe.text), `${probe.status} ${probe.text.slice(0, 140)}`);
        while (Date.now() - connectedAt < CLOSED_WITHIN_MS + 5_000) {
          if (sockets(pid) <= baseSockets) {
            closedMs = Date.now() - connectedAt;
            break;
          }
          await sleep(100);
        }
      } finally {
        peakRss = peak.stop();
      }
      c.atMost('every stuck stream closed after the clients connected', closedMs, CLOSED_WITHIN_MS, ' ms');
      const grewMb = Math.round(((peakRss - baseRss) / 2 ** 20) * 10) / 10;
      c.atMost(`the node's memory growth (peak with the clients ${(peakRss / 2 ** 20).toFixed(0)} MB, peak before ${(baseRss / 2 ** 20).toFixed(0)} MB)`, grewMb, GROWTH_MB, ' MB');
      c.equal('streams dropped as slow (leasehold_events_clients_dropped_total{reason="slow"})', await metricOf(node, 'leasehold_events_clients_dropped_total{reason="slow"}'), MAX_CLIENTS);
      c.equal('event streams still open (leasehold_events_clients)', await metricOf(node, 'leasehold_events_clients'), 0);
      for (const sock of clients) sock.destroy();
      ctx.log(`closed within ${closedMs} ms; grew ${grewMb} MB`);

      await sleep(2_000);
      const { stopAt, all } = await stopGracefully(s, c);
      const dup = duplicates(all, ['tick']);
      c.equal('ticks run twice', dup, 0);
      const cov = tickCoverage(all, 'tick', [{ from: t0 + 1_000, to: stopAt - 1_000 }]);
      c.equal('ticks of the 1 s job not run, warm-up and clients included', cov.notRun.length, 0);
      const lost = await compareCounts(c, s, all, ['tick', 'local']);
      return { expected: cov.expected, done: cov.done, duplicated: dup, lostCounts: lost, missed: await missedCount(s, ['tick']), checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
