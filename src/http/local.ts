/**
 * The routes of a runner without Redis: health and this node's metrics, and a clear answer
 * (503) where the status (and the status page) would need Redis. The read and metrics tokens
 * guard them as they guard the full routes.
 * @module
 */
import type { FastifyPluginAsync } from 'fastify';
import { metricsChecker, readAccess } from './auth.js';
import type { ExecutorsSource } from '../status/api.js';
import type { AuthFailures } from './auth-failures.js';
import { authorization, guard, nameTheNode, ownFailures, type MetricsSource } from './plugin.js';

/** Options of {@link localRoutes}. */
export interface LocalRoutesOptions {
  /** This node's id, sent as the `X-Leasehold-Node` header of every answer. */
  readonly instanceId: string;
  /** What `GET /metrics` serves. */
  readonly metrics: MetricsSource;
  /** Token of the reads (`GET /manage/*`); without one they are open. */
  readonly readToken?: string;
  /** Bearer token of `GET /metrics`; without one it is open. */
  readonly metricsToken?: string;
  /** This node's executors of background tasks, for `GET /manage/executors`. */
  readonly executors?: ExecutorsSource;
  /** Where failed token attempts are counted; without one the plugin keeps its own. */
  readonly failures?: AuthFailures;
}

/**
 * `GET /health` and `GET /metrics` answer; the status routes say that the status is kept in
 * Redis. Every answer names this node in its `X-Leasehold-Node` header.
 */
export const localRoutes: FastifyPluginAsync<LocalRoutesOptions> = async (app, opts) => {
  nameTheNode(app, opts.instanceId);
  const access = readAccess(opts.readToken, undefined);
  const metricsCheck = metricsChecker(opts.metricsToken);
  const failures = opts.failures ?? ownFailures(app);
  const readOnly = guard((req) => access.check(authorization(req), req.headers.cookie), failures);
  const metricsOnly = guard((req) => metricsCheck(authorization(req)), failures);
  const needRedis = { statusCode: 503, error: 'Service Unavailable', message: 'the job status is kept in Redis, and this node has none: give the runner redisUrl (REDIS_URL for leasehold start, or --private-redis)' };
  app.get('/health', async () => ({ status: 'ok', reasons: [], redis: 'not configured' }));
  app.get('/health/live', async () => ({ status: 'ok', reasons: [] }));
  app.get('/health/ready', async () => ({ status: 'ok', reasons: [], redis: 'not configured' }));
  app.get('/metrics', { onRequest: metricsOnly }, async (_req, reply) => {
    const { contentType, text } = await opts.metrics();
    return reply.type(contentType).send(text);
  });
  app.get('/manage/executors', { onRequest: readOnly }, async () => ({ executors: opts.executors ? await opts.executors() : [] }));
  app.get('/manage/jobs', { onRequest: readOnly }, async (_req, reply) => reply.code(503).send(needRedis));
  app.get('/manage/jobs/*', { onRequest: readOnly }, async (_req, reply) => reply.code(503).send(needRedis));
  app.get('/manage/ui', { onRequest: readOnly }, async (_req, reply) => reply.code(503).send(needRedis));
  app.get('/manage/ui/*', { onRequest: readOnly }, async (_req, reply) => reply.code(503).send(needRedis));
  app.get('/manage/events', { onRequest: readOnly }, async (_req, reply) => reply.code(503).send(needRedis));
  app.post('/manage/jobs/*', async (_req, reply) => reply.code(503).send(needRedis));
};
