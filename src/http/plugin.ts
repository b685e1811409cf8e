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
import { ErrorCodes, isLeaseholdError } from '../errors.js';
import type { ManageApi } from '../status/api.js';
import { bearerChecker, metricsChecker, readAccess, type AuthDecision } from './auth.js';
import { StatusEvents, type ExecutorsSource } from './events.js';
import { send } from './problem.js';
import { loadAssets } from './ui/assets.js';
import { registerUiRoutes } from './ui/routes.js';
import { JOB_ID_PATTERN } from '../schedule/job.js';

/** Prometheus text of this node's metrics, as `GET /metrics` serves it. */
export type MetricsSource = () => Promise<{ contentType: string; text: string }>;

export type { ExecutorsSource } from './events.js';

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
  /**
   * The event streams of `GET /manage/events`; the owner closes them on shutdown. Without one
   * the plugin makes its own, closed when fastify closes.
   */
  readonly events?: StatusEvents;
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
const params = {
  type: 'object',
  properties: { id: { type: 'string', pattern: JOB_ID_PATTERN.source } },
  required: ['id'],
  additionalProperties: false,
} as const;
/** Admin actions take no arguments: no body, `null` or `{}`. */
const body = { type: ['object', 'null'], maxProperties: 0 } as const;

/** An onRequest hook from a check of the `Authorization` (and `Cookie`) headers. */
export function guard(check: (req: FastifyRequest) => AuthDecision) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const decision = check(req);
    if (decision.ok) return undefined;
    if (decision.status === 401) void reply.header('www-authenticate', 'Bearer');
    return send(reply, decision.status, decision.message);
  };
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
      void send(reply, 503, 'Redis is unreachable; try again');
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
  const access = readAccess(opts.readToken, opts.adminToken);
  const metricsCheck = metricsChecker(opts.metricsToken);
  const readOnly = guard((req) => access.check(authorization(req), req.headers.cookie));
  const metricsOnly = guard((req) => metricsCheck(authorization(req)));
  const events = opts.events ?? new StatusEvents({ api, ...(opts.clock ? { clock: opts.clock } : {}), ...(opts.executors ? { executors: opts.executors } : {}), onReadError: (err) => app.log.debug({ err }, 'status events: reading the status failed') });
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

  app.get('/manage/jobs', { schema: { headers, querystring: query }, onRequest: readOnly }, async (_req, reply) =>
    reply.type('application/json; charset=utf-8').send(await api.clusterJson()),
  );

  app.get('/manage/executors', { schema: { headers, querystring: query }, onRequest: readOnly }, async () => ({ executors: opts.executors ? await opts.executors() : [] }));

  app.get<{ Params: { id: string } }>('/manage/jobs/:id', { schema: { headers, querystring: query, params }, onRequest: readOnly }, async (req, reply) => {
    const job = await api.job(req.params.id);
    if (!job) return send(reply, 404, `unknown job ${JSON.stringify(req.params.id)}`);
    return job;
  });

  // Before the body and params are looked at: without the right token nothing is revealed.
  const adminOnly = guard((req) => check(authorization(req)));

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
