/**
 * Real leasehold nodes for a fault scenario: started with the chaos jobs on one Redis and
 * one key prefix, read through their logs, their HTTP routes and Redis.
 * @module
 */
import type { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { getText } from '../test/helpers/deaf-clients.js';
import { spawnLeasehold, type NodeProc } from '../test/helpers/node.js';
import type { ChaosJobId } from './jobs.js';

/** Path of the jobs module, relative to the repository root (the nodes' working directory). */
export const JOBS_MODULE = 'chaos/jobs.ts';

/** A node of a {@link Cluster}. */
export interface ChaosNode {
  /** Its instance id. */
  readonly id: string;
  readonly proc: NodeProc;
  /** True while it is frozen by {@link Cluster.freeze}. */
  frozen: boolean;
}

/** What every node of a cluster shares. */
export interface ClusterOptions {
  readonly redisUrl: string;
  readonly prefix: string;
  readonly runLog: string;
  readonly jobs: readonly ChaosJobId[];
  /** More environment for every node (CHAOS_WORK_LEASE, ...). */
  readonly env?: Readonly<Record<string, string>>;
}

/** An HTTP answer: status code and parsed JSON body. */
export interface JsonReply {
  readonly status: number;
  readonly body: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** Nodes started, frozen, thawed, killed and stopped by a scenario. */
export class Cluster {
  readonly nodes: ChaosNode[] = [];

  constructor(private readonly opts: ClusterOptions) {}

  /** Spawns a node (does not wait; see {@link ready}); `env` is its own, over the cluster's. */
  spawn(id: string, env?: Record<string, string>): ChaosNode {
    const proc = spawnLeasehold(['start', '--jobs', JOBS_MODULE], {
      REDIS_URL: this.opts.redisUrl,
      LEASEHOLD_PREFIX: this.opts.prefix,
      LEASEHOLD_INSTANCE_ID: id,
      LEASEHOLD_SHUTDOWN_GRACE: '1s',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'debug',
      RUN_LOG: this.opts.runLog,
      CHAOS_JOBS: this.opts.jobs.join(','),
      ...this.opts.env,
      ...env,
    });
    const node: ChaosNode = { id, proc, frozen: false };
    this.nodes.push(node);
    return node;
  }

  /** Spawns a node and waits until its runner has started and its HTTP port is known. */
  async start(id: string, ms = 20_000, env?: Record<string, string>): Promise<ChaosNode> {
    const node = this.spawn(id, env);
    await ready(node, ms);
    return node;
  }

  /** The nodes whose process has not exited. */
  alive(): ChaosNode[] {
    return this.nodes.filter((n) => n.proc.child.exitCode === null && n.proc.child.signalCode === null);
  }

  /** Freezes a node's process (SIGSTOP), as a long GC pause or a suspended VM would. */
  freeze(node: ChaosNode): void {
    node.proc.child.kill('SIGSTOP');
    node.frozen = true;
  }

  /** Thaws a frozen node (SIGCONT). */
  thaw(node: ChaosNode): void {
    node.proc.child.kill('SIGCONT');
    node.frozen = false;
  }

  /** SIGTERM, then waits for the exit; SIGKILL if it has not exited within `ms`. Returns the exit code. */
  async stop(node: ChaosNode, ms = 15_000): Promise<number | null> {
    if (node.frozen) this.thaw(node);
    if (node.proc.child.exitCode === null && node.proc.child.signalCode === null) node.proc.kill('SIGTERM');
    const result = await Promise.race([node.proc.exited, sleep(ms, undefined, { ref: false })]);
    if (result === undefined) {
      node.proc.kill('SIGKILL');
      await node.proc.exited;
      return null;
    }
    return result.code;
  }

  /** Kills a node at once (SIGKILL) and waits until it is gone. */
  async kill(node: ChaosNode): Promise<void> {
    node.proc.kill('SIGKILL');
    await node.proc.exited;
    node.frozen = false;
  }

  /** Stops every node still alive, gracefully, all at once. Returns their exit codes. */
  async stopAll(): Promise<Array<number | null>> {
    return Promise.all(this.alive().map((n) => this.stop(n)));
  }
}

/** Waits until a node's runner has started and it listens on its HTTP port. */
export async function ready(node: ChaosNode, ms = 20_000): Promise<void> {
  await node.proc.waitFor((l) => l['msg'] === 'leasehold runner started', ms);
  await node.proc.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'), ms);
}

/** The HTTP port a node listens on (after {@link ready}). */
export function portOf(node: ChaosNode): number {
  const line = node.proc.lines.find((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'));
  if (line === undefined) throw new Error(`node ${node.id} has not logged its HTTP port`);
  return line['port'] as number;
}

/** GET `path` from a node, with a timeout; a connection failure is status 0. */
export function getJson(node: ChaosNode, path: string, ms = 5_000): Promise<JsonReply> {
  return requestJson(node, path, { ms });
}

/** A request to a node (GET unless told), with a timeout; the body parsed as JSON when it is; a connection failure is status 0. */
export async function requestJson(node: ChaosNode, path: string, opts: { method?: string; headers?: Record<string, string>; ms?: number } = {}): Promise<JsonReply> {
  try {
    const res = await fetch(`http://127.0.0.1:${portOf(node)}${path}`, { method: opts.method ?? 'GET', headers: opts.headers ?? {}, signal: AbortSignal.timeout(opts.ms ?? 5_000) });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text) as unknown;
    } catch {
      // not JSON: kept as text
    }
    return { status: res.status, body };
  } catch (err) {
    return { status: 0, body: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * The value of one series in a node's `/metrics` (`name` with its labels as printed, e.g.
 * `leasehold_unhandled_errors_total{kind="rejection"}`); 0 when the node does not print it,
 * NaN when the node did not answer. Asked on a connection of its own, closed after the answer,
 * so that the node's open sockets can be counted meanwhile.
 */
export async function metricOf(node: ChaosNode, series: string): Promise<number> {
  const reply = await getText(portOf(node), '/metrics').catch(() => ({ status: 0, text: '' }));
  if (reply.status !== 200) return NaN;
  const line = reply.text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** Polls `GET path` until `pred` holds for the reply; returns the last reply either way. */
export async function pollJson(node: ChaosNode, path: string, pred: (r: JsonReply) => boolean, ms: number): Promise<{ reply: JsonReply; ok: boolean; afterMs: number }> {
  const t0 = Date.now();
  let reply: JsonReply = { status: 0, body: 'not asked yet' };
  while (Date.now() - t0 < ms) {
    reply = await getJson(node, path, 2_000);
    if (pred(reply)) return { reply, ok: true, afterMs: Date.now() - t0 };
    await sleep(100);
  }
  return { reply, ok: false, afterMs: Date.now() - t0 };
}

/** Whether a `/health` answer names Redis among its reasons. */
export function healthNamesRedis(reply: JsonReply): boolean {
  if (!isObject(reply.body) || !Array.isArray(reply.body['reasons'])) return false;
  return reply.body['reasons'].some((r: unknown) => isObject(r) && r['check'] === 'redis' && /redis/i.test(String(r['message'])));
}

/** Polls `/health` until Redis is no longer among its reasons; the detail says what it answered. */
export async function waitRedisHealthy(node: ChaosNode, since: number, ms = 10_000): Promise<{ ok: boolean; detail: string }> {
  const h = await pollJson(node, '/health', (r) => r.status !== 0 && !healthNamesRedis(r), ms);
  const reasons = isObject(h.reply.body) && Array.isArray(h.reply.body['reasons']) ? h.reply.body['reasons'] : [];
  const rest = reasons.length === 0 ? '' : `; other reasons: ${JSON.stringify(reasons).slice(0, 160)}`;
  return { ok: h.ok, detail: h.ok ? `${Date.now() - since} ms after, /health ${h.reply.status}${rest}` : `still ${h.reply.status} ${JSON.stringify(h.reply.body).slice(0, 200)}` };
}

/** The counters of a job's stats hash, as numbers (text fields are left out). */
export async function readCounters(redis: Redis, prefix: string, jobId: string): Promise<Record<string, number>> {
  const hash = await redis.hgetall(`${prefix}:{${jobId}}:stats`);
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(hash)) if (/^-?\d+$/.test(v)) out[k] = Number(v);
  return out;
}
