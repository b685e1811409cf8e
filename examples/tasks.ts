/**
 * Background tasks on the three kinds of executor, in a fastify service: a webhook after the
 * response on the event loop (`loop`), a CPU-heavy report on worker threads (`worker`, its task
 * in `examples/report.ts`), and e-mails on a durable queue that every node consumes (`queue`).
 * Run it with `npx tsx examples/tasks.ts` (REDIS_URL must point to a Redis), then
 * `curl -X POST localhost:3000/orders/42`.
 */
import Fastify from 'fastify';
import { createRunner, defineTask } from 'leasehold';
// A worker task lives in a module without side effects: its thread imports that module, and
// importing this one would start a second server and a second runner there.
import { buildReport } from './report.js';

/** Waits on sockets: the event loop serves many at once. */
export const notifyWebhook = defineTask({
  id: 'notify-webhook',
  executor: 'webhooks',
  async run(order: { id: string }, ctx) {
    const res = await fetch(process.env['WEBHOOK_URL'] ?? 'https://example.com/hooks/orders', {
      method: 'POST',
      body: JSON.stringify(order),
      signal: ctx.signal,
    }).catch((err: unknown) => ({ ok: false, status: String(err) }));
    ctx.log.info({ status: res.status }, 'webhook sent');
  },
});

/** Must not be lost: persisted in Redis, retried with backoff, run by whichever node is free. */
export const sendReceipt = defineTask({
  id: 'send-receipt',
  executor: 'mail',
  async run(order: { id: string; to: string }, ctx) {
    // Delivery is at least once: ctx.taskId is stable across attempts, an idempotency key for the mail API.
    ctx.log.info({ to: order.to, idempotencyKey: ctx.taskId, attempt: ctx.attempt }, 'receipt sent');
  },
});

const runner = createRunner({
  redisUrl: process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379',
  executors: {
    webhooks: { kind: 'loop', concurrency: 50, queueLimit: 10_000, timeout: '10s' },
    reports: { kind: 'worker', concurrency: 2, timeout: '2m' },
    mail: { kind: 'queue', concurrency: 10, attempts: 5, backoff: '2s' },
  },
});
runner.addTask(notifyWebhook);
runner.addTask(buildReport);
runner.addTask(sendReceipt);

const app = Fastify();
app.post<{ Params: { id: string } }>('/orders/:id', async (req) => {
  const order = { id: req.params.id };
  // Fire and forget: a failure is logged and counted, never an unhandled rejection.
  await runner.submit(notifyWebhook, order);
  // Deduplicated by order: a retried request does not send a second receipt.
  await runner.submit(sendReceipt, { ...order, to: 'customer@example.com' }, { id: `receipt-${order.id}` });
  // Awaited: the response carries the report.
  const report = await runner.submit(buildReport, { ...order, lines: 5 });
  return report.result();
});
await app.register(runner.routes);
await runner.start();
// This machine only unless HOST says otherwise (a container sets HOST=0.0.0.0).
await app.listen({ port: Number(process.env['PORT'] ?? 3000), host: process.env['HOST'] ?? '127.0.0.1' });

process.once('SIGTERM', () => void runner.stop().then(() => app.close()));
