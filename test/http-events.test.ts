/**
 * The status page's event stream (`src/http/events.ts`) over a real socket, fed by a stand-in
 * status source: the whole status first, then only the jobs that changed (a lease's TTL
 * ticking down is no change, its extension is), removed jobs, the instances when they change,
 * a `problem` while the status cannot be read and its end, comment heartbeats, no timer and
 * no read while nobody listens, every stream ended by `close()`, and the executors in the
 * snapshot and, whole, in a change when a figure changed.
 */
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { StatusEvents, checkMaxClients } from '../src/http/events.js';
import { isLeaseholdError } from '../src/errors.js';
import type { ClusterStatus, JobStatus } from '../src/status/model.js';

function job(id: string, extra: Partial<JobStatus> = {}): JobStatus {
  return {
    id, scope: 'installation', description: null, schedule: { kind: 'fixedRate', expression: '1s', zone: null, intervalMs: 1000 }, state: 'ok', invalidCause: null,
    degradedReasons: [], active: true, lastRegisteredAt: null, runs: 0, succeeded: 0, failed: 0, timedOut: 0, lockLost: 0, lost: 0, interrupted: 0, cancelled: 0, overruns: 0, skipped: 0,
    skippedClaimed: 0, skippedPaused: 0, missed: 0, streak: 0, lastOutcome: null, lastError: null, lastStartedAt: null, lastDurationMs: null, lastInstance: null,
    lastSuccessAt: null, successDueBy: null, nextDueAt: null, createdAt: null, settings: {}, lease: null, instances: [], ...extra,
  };
}

function status(at: number, jobs: JobStatus[], instances = [{ id: 'a', host: 'h', pid: 1, version: '1', startedAt: null, lastSeenAt: null, jobs: 1 }]): ClusterStatus {
  return { generatedAt: new Date(at).toISOString(), jobs, instances, problems: [] };
}

interface Frame { event: string; data: unknown }

/** A client: the frames and comments it got so far. A `paused` one reads nothing until `resume()`. */
function listen(port: number, path = '/', paused = false): { frames: Frame[]; comments: string[]; ended: Promise<void>; close(): void; resume(): void } {
  const frames: Frame[] = [];
  const comments: string[] = [];
  let buffer = '';
  let closeIt = (): void => undefined;
  let resume = (): void => undefined;
  const ended = new Promise<void>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path }, (res) => {
      if (paused) {
        res.pause();
        resume = () => res.resume();
      }
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        buffer += d;
        let i: number;
        while ((i = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, i);
          buffer = buffer.slice(i + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event && data) frames.push({ event, data: JSON.parse(data) });
          for (const c of block.split('\n').filter((l) => l.startsWith(':'))) comments.push(c);
        }
      });
      res.on('end', resolve);
      res.on('error', () => resolve());
    });
    req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(err)));
    req.end();
    closeIt = () => req.destroy();
  });
  return { frames, comments, ended, close: () => closeIt(), resume: () => resume() };
}

async function until(what: string, f: () => boolean, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('status events', () => {
  let current: ClusterStatus | Error = status(1_000_000, [job('a'), job('b')]);
  let reads = 0;
  const events = new StatusEvents({
    api: {
      cluster: async () => {
        reads++;
        if (current instanceof Error) throw current;
        return current;
      },
    },
    pollMs: 20,
    heartbeatMs: 100,
  });
  let server: Server;
  let port = 0;

  before(async () => {
    server = createServer((req, res) => events.attach(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const a = server.address();
    port = typeof a === 'object' && a ? a.port : 0;
  });
  after(async () => {
    events.close();
    await new Promise((r) => server.close(r));
  });

  it('sends the whole status first, then only what changed', async () => {
    const c = listen(port);
    await until('the snapshot', () => c.frames.length >= 1);
    assert.equal(c.frames[0]?.event, 'snapshot');
    assert.deepEqual((c.frames[0]?.data as ClusterStatus).jobs.map((j) => j.id), ['a', 'b']);

    // A new read with nothing new (another object, the same content) sends nothing.
    current = status(1_000_500, [job('a'), job('b')]);
    await sleep(100);
    assert.equal(c.frames.length, 1);

    current = status(1_001_000, [job('a', { runs: 1, lastOutcome: 'succeeded' }), job('b')]);
    await until('a change', () => c.frames.length >= 2);
    assert.deepEqual(c.frames[1], { event: 'changes', data: { generatedAt: new Date(1_001_000).toISOString(), jobs: [job('a', { runs: 1, lastOutcome: 'succeeded' })], removed: [] } });

    // A lease counting down is no change; an extension (its end moves) is.
    const lease = (ttlMs: number) => ({ holder: 'n1', since: null, fencingToken: 3, ttlMs, value: 'n1' });
    current = status(1_002_000, [job('a', { runs: 1, lastOutcome: 'succeeded' }), job('b', { lease: lease(10_000) })]);
    await until('the lease', () => c.frames.length >= 3);
    current = status(1_003_000, [job('a', { runs: 1, lastOutcome: 'succeeded' }), job('b', { lease: lease(9_000) })]);
    await sleep(100);
    assert.equal(c.frames.length, 3, 'the same lease end, later');
    current = status(1_006_000, [job('a', { runs: 1, lastOutcome: 'succeeded' }), job('b', { lease: lease(10_000) })]);
    await until('the extension', () => c.frames.length >= 4);
    assert.deepEqual((c.frames[3]?.data as { jobs: JobStatus[] }).jobs.map((j) => j.id), ['b']);

    // A job that goes, and instances that change.
    current = status(1_007_000, [job('b', { lease: lease(9_000) })], []);
    await until('the removal', () => c.frames.length >= 5);
    assert.deepEqual(c.frames[4]?.data, { generatedAt: new Date(1_007_000).toISOString(), jobs: [], removed: ['a'], instances: [] });
    c.close();
    await c.ended;
  });

  it('says when the status cannot be read, once, and when it can again', async () => {
    const c = listen(port);
    await until('the snapshot', () => c.frames.length >= 1);
    current = new Error('Redis is unreachable');
    await until('the problem', () => c.frames.length >= 2);
    await sleep(100);
    assert.deepEqual(c.frames.slice(1), [{ event: 'problem', data: { message: 'Redis is unreachable' } }], 'said once');
    current = status(1_010_000, [job('b')]);
    await until('the recovery', () => c.frames.some((f) => f.event === 'problem' && (f.data as { message: unknown }).message === null));
    c.close();
    await c.ended;
  });

  it('sends heartbeats; reads nothing and keeps no timer while nobody listens', async () => {
    const c = listen(port);
    await until('a heartbeat', () => c.comments.some((l) => l.startsWith(': keep-alive')), 2_000);
    c.close();
    await c.ended;
    await until('the client gone', () => events.listening === 0);
    const before = reads;
    await sleep(150);
    assert.equal(reads, before, 'no read without a listener');
  });

  it('close() ends every stream; later connections get 503', async () => {
    const a = listen(port);
    const b = listen(port);
    await until('both connected', () => a.frames.length >= 1 && b.frames.length >= 1);
    events.close();
    await Promise.all([a.ended, b.ended]);
    assert.equal(events.listening, 0);
    const status503 = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(status503, 503);
  });
});

describe('status events with the executors', () => {
  const row = (queued: number) => ({ name: 'io', kind: 'loop', instanceId: 'n1', concurrency: 1, active: 1, queued, succeeded: 0, failed: 0, timedOut: 0, cancelled: 0, interrupted: 0 });
  let rows = [row(0)];
  let executorReads = 0;
  const fixed = status(2_000_000, [job('a')]);
  const events = new StatusEvents({
    api: { cluster: async () => fixed },
    executors: async () => {
      executorReads++;
      return rows;
    },
    pollMs: 20,
    executorsEveryMs: 100,
  });
  let server: Server;
  let port = 0;

  before(async () => {
    server = createServer((req, res) => events.attach(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const a = server.address();
    port = typeof a === 'object' && a ? a.port : 0;
  });
  after(async () => {
    events.close();
    await new Promise((r) => server.close(r));
  });

  it('the snapshot carries them; a change of a figure sends them whole, the jobs unchanged; they are read less often than the jobs', async () => {
    const c = listen(port);
    await until('the snapshot', () => c.frames.length >= 1);
    assert.deepEqual((c.frames[0]?.data as { executors: unknown }).executors, [row(0)]);
    const readsBefore = executorReads;
    await sleep(300);
    assert.equal(c.frames.length, 1, 'nothing changed, nothing sent');
    assert.ok(executorReads - readsBefore <= 4, `read at most every 100 ms, not every 20 ms look: ${executorReads - readsBefore} reads in 300 ms`);
    rows = [row(3)];
    await until('the change', () => c.frames.length >= 2);
    assert.deepEqual(c.frames[1], { event: 'changes', data: { generatedAt: fixed.generatedAt, jobs: [], removed: [], executors: [row(3)] } });
    c.close();
    await c.ended;
  });
});

describe('status events with slow clients', () => {
  // Frames of about 3 MB: one fills the kernel's buffers of a client that does not read.
  const description = 'x'.repeat(300_000);
  let runs = 0;
  const big = (): ClusterStatus => status(3_000_000 + runs * 1_000, Array.from({ length: 10 }, (_, i) => job(`big-${i}`, { description, runs })));
  const capped = new StatusEvents({ api: { cluster: async () => status(3_000_000, [job('a')]) }, pollMs: 20, maxClients: 2 });
  const events = new StatusEvents({ api: { cluster: async () => big() }, pollMs: 20, stallMs: 500 });
  const patient = new StatusEvents({ api: { cluster: async () => big() }, pollMs: 20, stallMs: 30_000 });
  let server: Server;
  let port = 0;

  before(async () => {
    server = createServer((req, res) => (req.url === '/patient' ? patient : req.url === '/capped' ? capped : events).attach(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const a = server.address();
    port = typeof a === 'object' && a ? a.port : 0;
  });
  after(async () => {
    capped.close();
    events.close();
    patient.close();
    await new Promise((r) => server.close(r));
  });

  it('the cap is a whole number from 1 to 100000, named where it is wrong', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, 100_001]) {
      assert.throws(() => new StatusEvents({ api: { cluster: async () => big() }, maxClients: bad }), (err: unknown) => isLeaseholdError(err, 'invalidConfig') && err.message === `maxClients: ${String(bad)} is not a whole number from 1 to 100000`);
    }
    assert.throws(() => checkMaxClients(0, 'eventsMaxClients'), /^LeaseholdError: eventsMaxClients: 0 is not a whole number/);
  });

  it('a client beyond maxClients is answered 503 with the reason, and counted', async () => {
    const a = listen(port, '/capped');
    const b = listen(port, '/capped');
    await until('both served', () => a.frames.length >= 1 && b.frames.length >= 1);
    const answer = await new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/capped' }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(answer.status, 503);
    assert.equal(answer.connection, 'close');
    assert.deepEqual(JSON.parse(answer.body), {
      statusCode: 503,
      error: 'Service Unavailable',
      message: 'this node serves at most 2 event streams at once (LEASEHOLD_EVENTS_MAX_CLIENTS, or the eventsMaxClients option) and all are open; try again later',
    });
    assert.deepEqual(capped.figures(), { clients: 2, refused: 1, dropped: 0 });
    a.close();
    b.close();
    await Promise.all([a.ended, b.ended]);
    await until('both gone', () => capped.listening === 0);
  });

  it('a client that does not read is disconnected once its socket has taken nothing for the stall time', async () => {
    const c = listen(port, '/', true);
    await until('the client served', () => events.listening === 1);
    // Each change is a 3 MB frame: the kernel's buffers fill, then nothing moves.
    for (let i = 0; i < 4; i++) {
      runs++;
      await sleep(100);
    }
    await until('the client dropped', () => events.listening === 0, 10_000);
    assert.deepEqual(events.figures(), { clients: 0, refused: 0, dropped: 1 });
    c.resume();
    await c.ended;
  });

  it('a client that falls behind skips the changes meanwhile, and once it has caught up gets the whole status as it is now', async () => {
    const c = listen(port, '/patient', true);
    await until('the client served', () => patient.listening === 1);
    await sleep(100);
    for (let i = 0; i < 5; i++) {
      runs++;
      await sleep(100);
    }
    const last = runs;
    c.resume();
    await until('the status as it is now', () => c.frames.some((f) => f.event === 'snapshot' && (f.data as ClusterStatus).jobs[0]?.runs === last), 10_000);
    const got = c.frames.map((f) => f.event);
    assert.equal(got[0], 'snapshot');
    assert.ok(got.filter((e) => e === 'changes').length < 5, `changes skipped while behind: ${got.join(', ')}`);
    assert.deepEqual(patient.figures(), { clients: 1, refused: 0, dropped: 0 });
    c.close();
    await c.ended;
  });
});

describe('status events of a large installation', () => {
  it('above pagedAbove jobs the stream sends counts by state, never a job; crossing back sends the whole status again', async () => {
    const many = (n: number, at: number, degraded = 0): ClusterStatus => status(at, Array.from({ length: n }, (_, i) => job(`j${String(i).padStart(3, '0')}`, i < degraded ? { state: 'degraded' } : {})));
    let current = many(30, 3_000_000);
    const events = new StatusEvents({ api: { cluster: async () => current }, pollMs: 20, heartbeatMs: 1_000, pagedAbove: 20 });
    const server = createServer((req, res) => events.attach(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const a = server.address();
    const c = listen(typeof a === 'object' && a ? a.port : 0);
    try {
      await until('the snapshot', () => c.frames.length >= 1);
      assert.deepEqual(c.frames[0], { event: 'snapshot', data: { ...status(3_000_000, []), paged: { total: 30, states: { ok: 30 } } } });
      // A job's run changes nothing the stream sends; a change of state changes the counts.
      current = many(30, 3_001_000);
      current.jobs[5] = job('j005', { runs: 1 });
      await sleep(150);
      assert.equal(c.frames.length, 1, 'nothing sent for a change of a job alone');
      current = many(31, 3_002_000, 2);
      await until('the counts', () => c.frames.length >= 2);
      assert.deepEqual(c.frames[1], { event: 'changes', data: { generatedAt: new Date(3_002_000).toISOString(), jobs: [], removed: [], paged: { total: 31, states: { degraded: 2, ok: 29 } } } });
      current = many(3, 3_003_000);
      await until('the whole status again', () => c.frames.length >= 3);
      assert.equal(c.frames[2]?.event, 'snapshot');
      assert.deepEqual((c.frames[2]?.data as ClusterStatus).jobs.map((j) => j.id), ['j000', 'j001', 'j002']);
      assert.equal((c.frames[2]?.data as { paged?: unknown }).paged, undefined);
      current = many(25, 3_004_000);
      await until('counts again', () => c.frames.length >= 4);
      assert.deepEqual([c.frames[3]?.event, (c.frames[3]?.data as ClusterStatus).jobs, (c.frames[3]?.data as { paged?: unknown }).paged], ['snapshot', [], { total: 25, states: { ok: 25 } }]);
    } finally {
      events.close();
      await c.ended;
      await new Promise((r) => server.close(r));
    }
  });
});
