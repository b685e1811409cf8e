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
import { StatusEvents } from '../src/http/events.js';
import type { ClusterStatus, JobStatus } from '../src/status/model.js';

function job(id: string, extra: Partial<JobStatus> = {}): JobStatus {
  return {
    id, scope: 'installation', description: null, schedule: { kind: 'fixedRate', expression: '1s', zone: null, intervalMs: 1000 }, state: 'ok', invalidCause: null,
    degradedReasons: [], active: true, lastRegisteredAt: null, runs: 0, succeeded: 0, failed: 0, timedOut: 0, lockLost: 0, interrupted: 0, cancelled: 0, overruns: 0, skipped: 0,
    skippedClaimed: 0, skippedPaused: 0, missed: 0, streak: 0, lastOutcome: null, lastError: null, lastStartedAt: null, lastDurationMs: null, lastInstance: null,
    lastSuccessAt: null, successDueBy: null, nextDueAt: null, createdAt: null, settings: {}, lease: null, instances: [], ...extra,
  };
}

function status(at: number, jobs: JobStatus[], instances = [{ id: 'a', host: 'h', pid: 1, version: '1', startedAt: null, lastSeenAt: null, jobs: 1 }]): ClusterStatus {
  return { generatedAt: new Date(at).toISOString(), jobs, instances };
}

interface Frame { event: string; data: unknown }

/** A client: the frames and comments it got so far. */
function listen(port: number): { frames: Frame[]; comments: string[]; ended: Promise<void>; close(): void } {
  const frames: Frame[] = [];
  const comments: string[] = [];
  let buffer = '';
  let closeIt = (): void => undefined;
  const ended = new Promise<void>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
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
  return { frames, comments, ended, close: () => closeIt() };
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
