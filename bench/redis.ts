/**
 * The benchmark's own `redis-server` (a fresh one per run, on a free loopback port) and the
 * server-side counters read from INFO.
 * @module
 */
import type { Redis } from 'ioredis';
import { startRedis, type TestRedis } from '../test/helpers/redis.js';

/** Redis's own counters at one moment. */
export interface ServerCounters {
  /** `total_commands_processed`: commands executed, those called inside Lua scripts included. */
  readonly commands: number;
  /** `used_cpu_user + used_cpu_sys`, ms. */
  readonly cpuMs: number;
  /** Calls by command name (`INFO commandstats`), those inside scripts included. */
  readonly byName: Readonly<Record<string, number>>;
  /**
   * Time spent executing commands (the `usec` of every command in `INFO commandstats`; a
   * script's inner calls are inside its `evalsha`), ms. The rest of `cpuMs` is reading
   * requests, writing replies and the event loop.
   */
  readonly execMs: number;
}

/** A private server and one client of the harness's own. */
export interface BenchRedis {
  readonly url: string;
  readonly hz: number;
  readonly version: string;
  counters(): Promise<ServerCounters>;
  stop(): Promise<void>;
}

/** `hz` of the server: `BENCH_REDIS_HZ`, else Redis's default 10. */
export function redisHz(): number {
  const hz = Number(process.env['BENCH_REDIS_HZ'] ?? '10');
  if (!Number.isInteger(hz) || hz < 1 || hz > 500) throw new Error(`BENCH_REDIS_HZ: ${process.env['BENCH_REDIS_HZ']} is not an integer from 1 to 500`);
  return hz;
}

function field(info: string, name: string): number {
  const m = new RegExp(`^${name}:([^\\r\\n]+)`, 'm').exec(info);
  const v = Number(m?.[1]);
  if (m === null || !Number.isFinite(v)) throw new Error(`INFO has no numeric ${name}`);
  return v;
}

/** Starts a server and connects the harness's client. */
export async function startBenchRedis(): Promise<BenchRedis> {
  const hz = redisHz();
  const server: TestRedis = await startRedis({ args: ['--hz', String(hz)] });
  const client: Redis = server.client();
  const info = await client.info('server');
  const version = /^redis_version:(\S+)/m.exec(info)?.[1] ?? 'unknown';
  return {
    url: server.url,
    hz,
    version,
    async counters() {
      const text = await client.info('stats', 'cpu', 'commandstats');
      const byName: Record<string, number> = {};
      let usec = 0;
      for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
        byName[m[1] ?? '?'] = Number(m[2]);
        usec += Number(m[3]);
      }
      return {
        commands: field(text, 'total_commands_processed'),
        cpuMs: (field(text, 'used_cpu_user') + field(text, 'used_cpu_sys')) * 1000,
        byName,
        execMs: usec / 1000,
      };
    },
    stop: () => server.stop(),
  };
}
