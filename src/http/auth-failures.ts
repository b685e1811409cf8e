/**
 * Failed token attempts: a credential offered that is not the token (a wrong bearer token on
 * an admin, read, metrics or MCP call, a wrong token at the sign-in). Each is counted by route
 * (`leasehold_auth_failures_total{route}`), logged at most once a minute per client with the
 * count since the last line, and a client with {@link FAILURE_LIMIT} failures within a minute
 * is answered 429 until that minute is over, whatever it sends, so a token cannot be guessed
 * by trying. A client is its address (`req.ip`: behind a proxy, set `trustProxy`).
 * @module
 */
import { systemClock } from '../clock.js';

/** Failed attempts a client may make within {@link WINDOW_MS}; beyond, it is answered 429. */
export const FAILURE_LIMIT = 20;
/** The window of the limit and of the log lines, in ms. */
export const WINDOW_MS = 60_000;
/** At most this many clients are remembered; the oldest is forgotten first. */
const MAX_CLIENTS = 10_000;

/** One log line about a client's failed attempts. */
export interface AuthFailureReport {
  readonly client: string;
  /** The route of the last failure. */
  readonly route: string;
  /** Failures since the last line about this client. */
  readonly failures: number;
  /** Whether the client is now answered 429. */
  readonly blocked: boolean;
}

/** Options of {@link AuthFailures}. */
export interface AuthFailuresOptions {
  /** Told at most once a minute per client. */
  readonly report?: (r: AuthFailureReport) => void;
  /** A monotonic clock in ms. Default the system's. */
  readonly now?: () => number;
}

interface Client {
  /** Start of the client's current window. */
  windowStart: number;
  /** Failures within it. */
  count: number;
  /** When the last line was logged (-Infinity: never). */
  loggedAt: number;
  /** Failures since then. */
  unlogged: number;
}

/** See the module comment. */
export class AuthFailures {
  private readonly clients = new Map<string, Client>();
  private readonly byRoute = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly opts: AuthFailuresOptions = {}) {
    this.now = opts.now ?? (() => systemClock.monotonic());
  }

  /** Seconds until `client` may try again; 0 when it may now. */
  retryAfter(client: string): number {
    const c = this.current(client);
    if (!c || c.count < FAILURE_LIMIT) return 0;
    return Math.max(1, Math.ceil((c.windowStart + WINDOW_MS - this.now()) / 1000));
  }

  /** Counts a failed attempt of `client` on `route`. */
  fail(client: string, route: string): void {
    this.byRoute.set(route, (this.byRoute.get(route) ?? 0) + 1);
    const now = this.now();
    let c = this.current(client);
    if (!c) {
      const old = this.clients.get(client);
      c = { windowStart: now, count: 0, loggedAt: old?.loggedAt ?? -Infinity, unlogged: old?.unlogged ?? 0 };
      this.remember(client, c);
    }
    c.count++;
    c.unlogged++;
    if (now - c.loggedAt >= WINDOW_MS) {
      this.opts.report?.({ client, route, failures: c.unlogged, blocked: c.count >= FAILURE_LIMIT });
      c.loggedAt = now;
      c.unlogged = 0;
    }
  }

  /** Failed attempts so far, by route. */
  totals(): ReadonlyMap<string, number> {
    return this.byRoute;
  }

  /** The client's entry while its window runs. */
  private current(client: string): Client | undefined {
    const c = this.clients.get(client);
    return c && this.now() - c.windowStart < WINDOW_MS ? c : undefined;
  }

  private remember(client: string, c: Client): void {
    this.clients.delete(client);
    if (this.clients.size >= MAX_CLIENTS) {
      const now = this.now();
      for (const [k, v] of this.clients) if (now - v.windowStart >= WINDOW_MS && now - v.loggedAt >= WINDOW_MS) this.clients.delete(k);
      const oldest = this.clients.keys().next();
      if (this.clients.size >= MAX_CLIENTS && !oldest.done) this.clients.delete(oldest.value);
    }
    this.clients.set(client, c);
  }
}
