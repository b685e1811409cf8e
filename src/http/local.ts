/**
 * The routes of a runner without Redis: health and this node's metrics, and a clear answer
 * (503) where the status would need Redis.
 * @module
 */
import type { FastifyPluginAsync } from 'fastify';
import { nameTheNode, type MetricsSource } from './plugin.js';

/** Options of {@link localRoutes}. */
export interface LocalRoutesOptions {
  /** This node's id, sent as the `X-Leasehold-Node` header of every answer. */
  readonly instanceId: string;
  /** What `GET /metrics` serves. */
  readonly metrics: MetricsSource;
}

/**
 * `GET /health` and `GET /metrics` answer; the status routes say that the status is kept in
 * Redis. Every answer names this node in its `X-Leasehold-Node` header.
 */
export const localRoutes: FastifyPluginAsync<LocalRoutesOptions> = async (app, opts) => {
  nameTheNode(app, opts.instanceId);
  const needRedis = { statusCode: 503, error: 'Service Unavailable', message: 'the job status is kept in Redis: configure REDIS_URL (or start with --private-redis)' };
  app.get('/health', async () => ({ status: 'ok', reasons: [], redis: 'not configured' }));
  app.get('/health/live', async () => ({ status: 'ok', reasons: [] }));
  app.get('/health/ready', async () => ({ status: 'ok', reasons: [], redis: 'not configured' }));
  app.get('/metrics', async (_req, reply) => {
    const { contentType, text } = await opts.metrics();
    return reply.type(contentType).send(text);
  });
  app.get('/manage/jobs', async (_req, reply) => reply.code(503).send(needRedis));
  app.get('/manage/jobs/*', async (_req, reply) => reply.code(503).send(needRedis));
  app.post('/manage/jobs/*', async (_req, reply) => reply.code(503).send(needRedis));
};
