/**
 * The routes of a node, wired to what they serve: with Redis the status routes and the MCP tools
 * over the status layer's API (with the page's event streams), without it the routes that
 * answer alone; and what `GET /metrics` serves.
 * @module
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from '../logger.js';
import type { Timers } from '../clock.js';
import type { ExecutorsSource, ManageApi } from '../status/api.js';
import { packageVersion } from '../status/index.js';
import { NODE_HEADER, leaseholdRoutes, type MetricsSource } from '../http/plugin.js';
import { localRoutes } from '../http/local.js';
import { bearerChecker, readAccess } from '../http/auth.js';
import { AuthFailures } from '../http/auth-failures.js';
import { StatusEvents, checkMaxClients, type EventStreamFigures } from '../http/events.js';
import { mcpRoutes, type McpAccess } from '../mcp/http.js';
import type { MetricsRegistry } from './options.js';

/** The tokens of the routes (checked), and what they serve beside the status. */
export interface RoutesOptions {
  readonly instanceId: string;
  readonly metrics: MetricsRegistry;
  /** The cluster's executors, for `GET /manage/executors`. */
  readonly executors?: ExecutorsSource | undefined;
  readonly adminToken?: string | undefined;
  readonly readToken?: string | undefined;
  readonly metricsToken?: string | undefined;
  /** Secret of the read cookie (default: the read token). */
  readonly cookieSecret?: string | undefined;
  /** Browser origins allowed to call `POST /mcp` beside the loopback ones (checked). */
  readonly mcpAllowedOrigins?: readonly string[] | undefined;
  readonly logger: Logger;
}

/** Routes bound to a node; `close()` ends the page's event streams (before Redis is closed under them). */
export interface NodeRoutes {
  readonly routes: FastifyPluginAsync;
  /** The page's event streams: open, refused and dropped clients. */
  figures(): EventStreamFigures;
  /** Failed token attempts so far, by route. */
  authFailures(): ReadonlyMap<string, number>;
  close(): void;
}

const NO_STREAMS: EventStreamFigures = { clients: 0, refused: 0, dropped: 0 };

/** What `GET /metrics` serves, from a registry. */
export function metricsSource(registry: MetricsRegistry): MetricsSource {
  return async () => ({ contentType: registry.contentType, text: await registry.metrics() });
}

/** The MCP tools' token checks: the same rules as the status routes' (made as the routes are registered). */
function mcpAccess(adminToken: string | undefined, readToken: string | undefined): McpAccess {
  const admin = bearerChecker(adminToken);
  const read = readAccess(readToken, adminToken);
  return { read: (authorization) => read.check(authorization, undefined), admin, adminConfigured: adminToken !== undefined && adminToken !== '', readProtected: read.protected };
}

/** Failed token attempts of a node's routes, logged through its logger. */
function authFailures(logger: Logger): AuthFailures {
  return new AuthFailures({
    report: (r) => logger.warn({ client: r.client, route: r.route, failures: r.failures, blocked: r.blocked }, '%d failed token attempt(s) from %s in the last minute (last on %s)%s', r.failures, r.client, r.route, r.blocked ? '; answered 429 for the rest of the minute' : ''),
  });
}

/** The routes of a node with Redis, over its status API. */
export function statusRoutes(opts: RoutesOptions & { readonly api: ManageApi; readonly clock: Timers; readonly now: () => number; readonly maxClients?: number | undefined }): NodeRoutes {
  const { api, instanceId, executors, adminToken, readToken, metricsToken, cookieSecret } = opts;
  const failures = authFailures(opts.logger);
  const maxClients = opts.maxClients === undefined ? undefined : checkMaxClients(opts.maxClients, 'eventsMaxClients');
  const events = new StatusEvents({ api, clock: opts.clock, executors, maxClients, onReadError: (err) => opts.logger.debug({ err }, 'status events: reading the status failed') });
  const routes: FastifyPluginAsync = async (app) => {
    await app.register(leaseholdRoutes, { api, instanceId, metrics: metricsSource(opts.metrics), events, executors, adminToken, readToken, metricsToken, cookieSecret, failures });
    await app.register(mcpRoutes, { api, nodeHeader: { name: NODE_HEADER, value: instanceId }, access: mcpAccess(adminToken, readToken), now: opts.now, version: packageVersion(), executors, allowedOrigins: opts.mcpAllowedOrigins ?? [], failures });
  };
  return { routes, figures: () => events.figures(), authFailures: () => failures.totals(), close: () => events.close() };
}

/** The routes of a node without Redis: health and metrics, and a 503 where the status would be. */
export function aloneRoutes(opts: RoutesOptions): NodeRoutes {
  const { instanceId, executors, readToken, metricsToken } = opts;
  const failures = authFailures(opts.logger);
  const routes: FastifyPluginAsync = async (app) => app.register(localRoutes, { instanceId, metrics: metricsSource(opts.metrics), executors, readToken, metricsToken, failures });
  return { routes, figures: () => NO_STREAMS, authFailures: () => failures.totals(), close: () => undefined };
}
