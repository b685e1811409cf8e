/**
 * The routes of a runner without Redis: health only, and a clear answer where the status
 * would need Redis.
 * @module
 */
import type { FastifyPluginAsync } from 'fastify';

/** `GET /health` answers; the status routes say that the status is kept in Redis. */
export const localRoutes: FastifyPluginAsync = async (app) => {
  const needRedis = { error: 'the job status is kept in Redis: configure REDIS_URL (or start with --private-redis)' };
  app.get('/health', async () => ({ status: 'ok', redis: 'not configured' }));
  app.get('/manage/jobs', async (_req, reply) => reply.code(503).send(needRedis));
  app.get('/manage/jobs/*', async (_req, reply) => reply.code(503).send(needRedis));
};
