/**
 * Event-stream clients that never read, against a real node of 200 jobs on a real Redis
 * (SPEC §10): the node serves at most `LEASEHOLD_EVENTS_MAX_CLIENTS` streams (default 100) and
 * refuses the rest with a 503 that says why, a client that does not read is dropped once its
 * send buffer is full or stuck, and the node's memory stays bounded. The clients are real TCP
 * sockets that send the request and never read a byte. Linux: the node's memory and open
 * sockets are read from `/proc`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { spawnLeasehold, type NodeProc } from './helpers/node.js';
import { deafClient, followPeakRss, getText as get, sockets, warmBaseline } from './helpers/deaf-clients.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { until } from './helpers/wait.js';

/** How many clients connect: three times the default cap. */
const CLIENTS = 300;
const DEFAULT_MAX_CLIENTS = 100;

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

async function startNode(): Promise<{ node: NodeProc; port: number; pid: number }> {
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-many.mjs', '--port', '0', '--host', '127.0.0.1'], { REDIS_URL: redis.url, LEASEHOLD_PREFIX: 'slow-clients', LOG_LEVEL: 'info', LEASEHOLD_SHUTDOWN_GRACE: '1s' });
  const line = await node.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'), 20_000);
  const pid = node.child.pid;
  assert.ok(pid !== undefined);
  return { node, port: line['port'] as number, pid };
}

test(`${CLIENTS} event-stream clients that never read: those over the cap get 503, the stuck ones are dropped within 30 s, and the node grows by at most 50 MB`, async (t) => {
  const { node, port, pid } = await startNode();
  // Warm up with one client that reads: the jobs run, the status is read and streamed (see warmBaseline).
  const { baseRss, warmMs } = await warmBaseline(pid, port);
  t.diagnostic(`the node was warm after ${Math.round(warmMs / 1000)} s`);
  const baseSockets = sockets(pid);

  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => deafClient(port)));
  const connectedAt = Date.now();
  const peak = followPeakRss(pid, baseRss);
  let peakRss = baseRss;
  try {
    // The node serves 100 of them and refuses the others (their connections closed).
    const over = CLIENTS - DEFAULT_MAX_CLIENTS;
    const refusedCount = new RegExp(`^leasehold_events_clients_dropped_total\\{reason="maxClients"\\} ${over}$`, 'm');
    await until(`${over} clients refused and their connections closed`, async () => sockets(pid) <= baseSockets + DEFAULT_MAX_CLIENTS && refusedCount.test((await get(port, '/metrics')).text), 20_000);
    // One more is told why, in the routes' problem body.
    const refused = await get(port, '/manage/events');
    assert.equal(refused.status, 503);
    const problem = JSON.parse(refused.text) as { statusCode: number; error: string; message: string };
    assert.equal(problem.statusCode, 503);
    assert.match(problem.message, /at most 100 event streams/);
    assert.match(problem.message, /LEASEHOLD_EVENTS_MAX_CLIENTS/);

    // The streams nobody reads are closed: the node holds no socket of theirs.
    await until('every stuck stream to be closed', () => sockets(pid) <= baseSockets, 30_000 - (Date.now() - connectedAt));
    t.diagnostic(`every stream closed ${((Date.now() - connectedAt) / 1000).toFixed(1)} s after the clients connected`);
  } finally {
    peakRss = peak.stop();
  }
  const grewMb = (peakRss - baseRss) / 2 ** 20;
  t.diagnostic(`the node's memory: ${(baseRss / 2 ** 20).toFixed(0)} MB at its peak before, ${(peakRss / 2 ** 20).toFixed(0)} MB at its peak with the clients`);
  assert.ok(grewMb <= 50, `the node grew by ${grewMb.toFixed(1)} MB (from ${(baseRss / 2 ** 20).toFixed(0)} MB)`);

  // Each client, reading at last, finds its stream ended.
  let open = 0;
  for (const s of clients) {
    if (s.destroyed) continue;
    open++;
    s.once('close', () => open--);
    s.on('data', () => undefined);
    s.resume();
  }
  await until('every client to see its stream end', () => open === 0, 10_000);

  // Counted: the refused ones (the 200 over the cap and the probe) and the dropped ones.
  const metrics = (await get(port, '/metrics')).text;
  assert.match(metrics, new RegExp(`^leasehold_events_clients_dropped_total\\{reason="maxClients"\\} ${CLIENTS - DEFAULT_MAX_CLIENTS + 1}$`, 'm'));
  assert.match(metrics, new RegExp(`^leasehold_events_clients_dropped_total\\{reason="slow"\\} ${DEFAULT_MAX_CLIENTS}$`, 'm'));
  assert.match(metrics, /^leasehold_events_clients 0$/m);

  node.kill('SIGTERM');
  assert.equal((await node.exited).code, 0);
});
