/**
 * The routes of a runner without Redis: health only, and a clear answer where the status
 * would need Redis.
 * @module
 */
import type { FastifyPluginAsync } from 'fastify';
import { nameTheNode } from './plugin.js';

/** Options of {@link localRoutes}. */
export interface LocalRoutesOptions {
  /** This node's id, sent as the `X-Leasehold-Node` header of every answer. */
  readonly instanceId: string;
}

/**
 * `GET /health` answers; the status routes say that the status is kept in Redis. Every answer
 * names this node in its `X-Leasehold-Node` header.
 */
export const localRoutes: FastifyPluginAsync<LocalRoutesOptions> = async (app, opts) => {
  nameTheNode(app, opts.instanceId);
  const needRedis = { error: 'the job status is kept in Redis: configure REDIS_URL (or start with --private-redis)' };
  app.get('/health', async () => ({ status: 'ok', redis: 'not configured' }));
  app.get('/manage/jobs', async (_req, reply) => reply.code(503).send(needRedis));
  app.get('/manage/jobs/*', async (_req, reply) => reply.code(503).send(needRedis));
};
