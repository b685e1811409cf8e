/**
 * The HTTP surface as one fastify plugin: the cluster's status, one job, admin actions
 * (run, pause, resume) behind a bearer token, health and Prometheus metrics, and the status
 * page with its event stream (`ui/routes.ts`). Reads may need a read token and `/metrics` a
 * token of its own; `/health/*` stays open for probes. Every route validates its input with a
 * JSON schema; bad input gets a 4xx, never a 5xx, and no error answer carries a stack trace.
 * @module
 */
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Timers } from '../clock.js';
import { ERRORS, ErrorCodes, isLeaseholdError } from '../errors.js';
import type { ExecutorsSource, ManageApi } from '../status/api.js';
import { asksForPage, parseJobsQuery, type RawJobsQuery } from '../status/page.js';
import { bearerChecker, metricsChecker, readAccess, type AuthDecision } from './auth.js';
import { AuthFailures } from './auth-failures.js';
import { StatusEvents, checkMaxClients } from './events.js';
import { send, tooManyFailures } from './problem.js';
import { loadAssets } from './ui/assets.js';
import { registerUiRoutes } from './ui/routes.js';
import { JOB_ID_PATTERN } from '../schedule/job.js';

/** Prometheus text of this node's metrics, as `GET /metrics` serves it. */
export type MetricsSource = () => Promise<{ contentType: string; text: string }>;

/** Options of {@link leaseholdRoutes}. */
export interface LeaseholdRoutesOptions {
  readonly api: ManageApi;
  /**
   * This node's id, sent as the `X-Leasehold-Node` header of every answer of these routes, so
   * behind a load balancer a caller sees which node answered.
   */
  readonly instanceId: string;
  /** What `GET /metrics` serves. */
  readonly metrics: MetricsSource;
  /** Bearer token of the admin routes; without one they are refused (403). */
  readonly adminToken?: string;
  /**
   * Token of the reads (`GET /manage/*`: the status, the page, its events), as a bearer header
   * or the cookie of the page's sign-in; without one reads are open.
   */
  readonly readToken?: string;
  /** Bearer token of `GET /metrics`; without one it is open. */
  readonly metricsToken?: string;
  /** Secret of the read cookie; without one the read token signs it (see `readAccess`). */
  readonly cookieSecret?: string;
  /**
   * Where failed token attempts are counted (and clients over the limit refused, 429); the
   * owner reads its totals for the metrics. Without one the plugin keeps its own, logged
   * through fastify's logger.
   */
  readonly failures?: AuthFailures;
  /**
   * The event streams of `GET /manage/events`; the owner closes them on shutdown. Without one
   * the plugin makes its own, closed when fastify closes.
   */
  readonly events?: StatusEvents;
  /** Event streams the plugin's own {@link StatusEvents} serves at once; beyond, 503. Default 100. */
  readonly eventsMaxClients?: number;
  /** Timers of the event streams the plugin makes. Default the system's. */
  readonly clock?: Timers;
  /** The executors of background tasks, for `GET /manage/executors`; without it the list is empty. */
  readonly executors?: ExecutorsSource;
}

/** The response header that names the node that answered. */
export const NODE_HEADER = 'x-leasehold-node';

/**
 * Sends `X-Leasehold-Node: <instanceId>` with every answer of the routes of `app`'s context:
 * successes, refusals of the admin hook, validation and other errors alike.
 */
export function nameTheNode(app: FastifyInstance, instanceId: string): void {
  app.addHook('onSend', async (_req, reply, payload) => {
    void reply.header(NODE_HEADER, instanceId);
    return payload;
  });
}

const headers = {
  type: 'object',
  properties: { authorization: { type: 'string', maxLength: 4096 } },
} as const;
const query = { type: 'object', maxProperties: 32 } as const;
/** `GET /manage/jobs`: the paging parameters as strings, read by `parseJobsQuery` (which names what is wrong). */
const jobsQuery = {
  type: 'object',
  maxProperties: 32,
  properties: { limit: { type: 'string', maxLength: 16 }, cursor: { type: 'string', maxLength: 1024 }, state: { type: 'string', maxLength: 64 }, q: { type: 'string', maxLength: 1024 } },
} as const;
const params = {
  type: 'object',
  properties: { id: { type: 'string', pattern: JOB_ID_PATTERN.source } },
  required: ['id'],
  additionalProperties: false,
} as const;
/** Admin actions take no arguments: no body, `null` or `{}`. */
const body = { type: ['object', 'null'], maxProperties: 0 } as const;

/**
 * An onRequest hook from a check of the `Authorization` (and `Cookie`) headers. A wrong token
 * is counted in `failures`; a client over their limit is answered 429 when it sends a
 * credential or when the check refuses it.
 */
export function guard(check: (req: FastifyRequest) => AuthDecision, failures?: AuthFailures) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const decision = check(req);
    const wait = failures?.retryAfter(req.ip) ?? 0;
    if (wait > 0 && (!decision.ok || req.headers.authorization !== undefined)) return tooManyFailures(reply, wait);
    if (decision.ok) return undefined;
    if (decision.wrong) failures?.fail(req.ip, req.routeOptions.url ?? 'unknown');
    if (decision.status === 401) void reply.header('www-authenticate', 'Bearer');
    return send(reply, decision.status, decision.message);
  };
}

/** Failed token attempts counted by a plugin of its own, logged through its logger. */
export function ownFailures(app: FastifyInstance): AuthFailures {
  return new AuthFailures({
    report: (r) => app.log.warn({ client: r.client, route: r.route, failures: r.failures, blocked: r.blocked }, '%d failed token attempt(s) from %s (last on %s)', r.failures, r.client, r.route),
  });
}

/** The `Authorization` header as a string (fastify types it loosely). */
export function authorization(req: FastifyRequest): string | undefined {
  const auth = req.headers.authorization;
  return typeof auth === 'string' ? auth : undefined;
}

function onError(app: FastifyInstance) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    if (err.validation) {
      void send(reply, 400, err.message);
      return;
    }
    const status = typeof err.statusCode === 'number' ? err.statusCode : 500;
    if (status >= 400 && status < 500) {
      void send(reply, status, err.message);
      return;
    }
    if (isLeaseholdError(err, ErrorCodes.redisError)) {
      void send(reply, ERRORS.redisError.http, 'Redis is unreachable; try again');
      return;
    }
    // A corrupt key in Redis: said as it is (the key and the repair), not as Redis being down.
    if (isLeaseholdError(err, ErrorCodes.corruptSettings)) {
      void send(reply, ERRORS.corruptSettings.http, err.message, err.code);
      return;
    }
    app.log.error({ err: { message: err.message, stack: err.stack }, url: req.routeOptions.url }, 'request failed');
    void send(reply, 500, 'internal error');
  };
}

/**
 * The routes: `GET /manage/jobs`, `GET /manage/jobs/:id`, `GET /manage/executors`, `POST /manage/jobs/:id/run`,
 * `.../pause`, `.../resume`, `GET /health` (and `/health/live`, `/health/ready` for
 * probes), `GET /metrics`, and the status page: `GET /manage/ui`, `GET /manage/events`,
 * `GET /manage/access`, `POST /manage/login`, `POST /manage/logout`. Each answer has an `X-Leasehold-Node` header naming this node. Register
 * it with `app.register(leaseholdRoutes, { api, instanceId, metrics, adminToken })` (fastify's `prefix` option works).
 * Job ids run to 128 characters, longer than fastify's default `maxParamLength` (100, answered
 * 414): create the instance with `routerOptions: { maxParamLength: 256 }` to reach every job.
 */
export const leaseholdRoutes: FastifyPluginAsync<LeaseholdRoutesOptions> = async (app, opts) => {
  const { api } = opts;
  const check = bearerChecker(opts.adminToken);
  nameTheNode(app, opts.instanceId);
  const access = readAccess(opts.readToken, opts.adminToken, { cookieSecret: opts.cookieSecret });
  const metricsCheck = metricsChecker(opts.metricsToken);
  const failures = opts.failures ?? ownFailures(app);
  const readOnly = guard((req) => access.check(authorization(req), req.headers.cookie), failures);
  const metricsOnly = guard((req) => metricsCheck(authorization(req)), failures);
  const events = opts.events ?? new StatusEvents({ api, ...(opts.clock ? { clock: opts.clock } : {}), ...(opts.executors ? { executors: opts.executors } : {}), ...(opts.eventsMaxClients !== undefined ? { maxClients: checkMaxClients(opts.eventsMaxClients, 'eventsMaxClients') } : {}), onReadError: (err) => app.log.debug({ err }, 'status events: reading the status failed') });
  // Streams end before fastify waits for requests in flight, so closing never hangs on them.
  app.addHook('preClose', (done) => {
    events.endStreams();
    done();
  });
  const assets = await loadAssets();
  if (!assets) app.log.warn('the status page (/manage/ui) is not built: run npm run build');

  // An empty JSON body is no body: `curl -X POST -H 'content-type: application/json'` works.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: 4_096 }, (_req, text, done) => {
    const raw = typeof text === 'string' ? text : text.toString('utf8');
    if (raw.trim() === '') {
      done(null, null);
      return;
    }
    try {
      done(null, JSON.parse(raw) as unknown);
    } catch {
      const err = new Error('the body is not valid JSON') as FastifyError;
      err.statusCode = 400;
      done(err, undefined);
    }
  });
  app.setErrorHandler(onError(app));

  app.get<{ Querystring: RawJobsQuery }>('/manage/jobs', { schema: { headers, querystring: jobsQuery }, onRequest: readOnly }, async (req, reply) => {
    try {
      if (asksForPage(req.query)) return await api.jobsPage(parseJobsQuery(req.query));
      return await reply.type('application/json; charset=utf-8').send(await api.clusterJson());
    } catch (err) {
      if (isLeaseholdError(err, ErrorCodes.invalidQuery)) return send(reply, 400, err.message);
      throw err;
    }
  });

  app.get('/manage/executors', { schema: { headers, querystring: query }, onRequest: readOnly }, async () => ({ executors: opts.executors ? await opts.executors() : [] }));

  app.get<{ Params: { id: string } }>('/manage/jobs/:id', { schema: { headers, querystring: query, params }, onRequest: readOnly }, async (req, reply) => {
    const job = await api.job(req.params.id);
    if (!job) return send(reply, 404, `unknown job ${JSON.stringify(req.params.id)}`);
    return job;
  });

  // Before the body and params are looked at: without the right token nothing is revealed.
  const adminOnly = guard((req) => check(authorization(req)), failures);

  const admin = (action: 'run' | 'pause' | 'resume' | 'cancel'): void => {
    app.post<{ Params: { id: string } }>(
      `/manage/jobs/:id/${action}`,
      { schema: { headers, querystring: query, params, body }, onRequest: adminOnly },
      async (req, reply) => {
        const result = await api[action](req.params.id);
        return reply.code(result.statusCode).send(result.body);
      },
    );
  };
  admin('run');
  admin('pause');
  admin('resume');
  admin('cancel');

  // A job that left the code of every node: its keys are removed (refused while a live node has it).
  app.delete<{ Params: { id: string } }>('/manage/jobs/:id', { schema: { headers, querystring: query, params }, onRequest: adminOnly }, async (req, reply) => {
    const result = await api.forget(req.params.id);
    return reply.code(result.statusCode).send(result.body);
  });

  app.get('/health', { schema: { headers, querystring: query } }, async (_req, reply) => {
    const report = await api.health();
    return reply.code(report.status === 'ok' ? 200 : 503).send(report);
  });

  // For probes that must not act on a job's health: liveness (the process answers) and
  // readiness (it reaches Redis). A degraded job is no reason to restart or unroute a node.
  app.get('/health/live', { schema: { headers, querystring: query } }, async () => ({ status: 'ok', reasons: [] }));
  app.get('/health/ready', { schema: { headers, querystring: query } }, async (_req, reply) => {
    const report = await api.ready();
    return reply.code(report.status === 'ok' ? 200 : 503).send(report);
  });

  registerUiRoutes(app, {
    assets,
    access,
    failures,
    adminEnabled: opts.adminToken !== undefined && opts.adminToken !== '',
    metricsProtected: opts.metricsToken !== undefined && opts.metricsToken !== '',
    events,
    readOnly,
    headers,
    query,
  });

  app.get('/metrics', { schema: { headers, querystring: query }, onRequest: metricsOnly }, async (_req, reply) => {
    const { contentType, text } = await opts.metrics();
    return reply.type(contentType).send(text);
  });
};
