/**
 * Event-stream clients that never read, and what a node holds meanwhile (Linux: its memory and
 * open sockets read from `/proc`). Shared by `test/http-events-slow.test.ts` and the chaos
 * scenario `slow event-stream clients`.
 * @module
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A process's resident memory, in bytes. */
export function rss(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

/**
 * Follows a process's peak resident memory, from `baseRss`, read every 250 ms until `stop()`,
 * which reads it once more and gives the peak in bytes.
 */
export function followPeakRss(pid: number, baseRss: number): { stop(): number } {
  let peak = baseRss;
  const sample = (): void => {
    peak = Math.max(peak, rss(pid));
  };
  const timer = setInterval(sample, 250);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** The sockets a process holds open (its file descriptors that are sockets). */
export function sockets(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
    } catch (err) {
      // ENOENT: the descriptor closed between the listing and the look.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return n;
}

/** A client that asks for the event stream and never reads: its socket is paused from the start. */
export function deafClient(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port });
    s.pause();
    s.once('error', reject);
    s.once('connect', () => {
      s.off('error', reject);
      // What the node does to it later (a reset) is looked at by the caller, not thrown.
      s.on('error', () => s.destroy());
      s.write(`GET /manage/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`);
      resolve(s);
    });
  });
}

/** A GET on its own connection, closed after the answer (no socket left open on the node). */
export function getText(port: number, path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: 20_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer in 20 s`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Warms a node up with one event-stream client that reads, and returns its memory baseline. The
 * garbage collector sizes the node's heap over its first minute or so (its memory climbs by 50
 * to 150 MB meanwhile, more on Node 24), and swings with each collection: the baseline is the
 * peak once no new peak came for `quietMs`, or after `maxMs` at the latest.
 */
export async function warmBaseline(pid: number, port: number, quietMs = 15_000, maxMs = 120_000): Promise<{ baseRss: number; warmMs: number }> {
  let baseRss = rss(pid);
  let peakAt = Date.now();
  let status = 0;
  let readerError: Error | undefined;
  const reader = request({ host: '127.0.0.1', port, path: '/manage/events' }, (res) => {
    status = res.statusCode ?? 0;
    res.resume();
  });
  reader.on('error', (err) => (readerError = err));
  reader.end();
  const warmFrom = Date.now();
  const warmUntil = warmFrom + maxMs;
  while (Date.now() - peakAt < quietMs && Date.now() < warmUntil) {
    await sleep(250);
    const now = rss(pid);
    if (now > baseRss) {
      baseRss = now;
      peakAt = Date.now();
    }
  }
  reader.destroy();
  if (readerError !== undefined) throw readerError;
  if (status !== 200) throw new Error(`the warm-up event stream answered ${status}`);
  await sleep(1_000);
  return { baseRss, warmMs: Date.now() - warmFrom };
}
