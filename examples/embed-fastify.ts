/**
 * Embedding leasehold in an existing fastify service: the runner runs beside the app's own
 * routes, its status routes are registered on the same server, and one shutdown path stops
 * both. Run it with `npx tsx examples/embed-fastify.ts` (REDIS_URL must point to a Redis).
 */
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createRunner, defineJob } from 'leasehold';

// The service's own Redis client: leasehold duplicates it for its connections and never closes it.
const redis = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
const logger = pino();
// Job ids may be up to 128 characters; fastify's default limit for a path parameter is 100.
const app = Fastify({ loggerInstance: logger, routerOptions: { maxParamLength: 256 } });

app.get('/hello', async () => ({ hello: 'world' }));

const runner = createRunner({
  redis,
  logger: logger.child({ component: 'leasehold' }),
  ...(process.env['LEASEHOLD_ADMIN_TOKEN'] ? { adminToken: process.env['LEASEHOLD_ADMIN_TOKEN'] } : {}),
});
runner.add(
  defineJob({
    id: 'purge-sessions',
    scope: 'installation',
    cron: '0 */5 * * * *',
    async run(ctx) {
      ctx.log.info({ fencingToken: ctx.fencingToken }, 'purging expired sessions');
    },
  }),
);

// /manage/jobs, /health, /metrics and the admin routes, next to the app's own.
await app.register(runner.routes);
await runner.start();
// This machine only unless HOST says otherwise (a container sets HOST=0.0.0.0).
await app.listen({ port: Number(process.env['PORT'] ?? 3000), host: process.env['HOST'] ?? '127.0.0.1' });

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    if (stopping) return;
    stopping = true;
    // The runner first (no new run, a grace for runs in progress, counters flushed), then HTTP.
    void runner
      .stop()
      .then(() => app.close())
      .then(() => redis.quit());
  });
}
