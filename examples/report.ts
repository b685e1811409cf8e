/**
 * The report task of `examples/tasks.ts`, in a module of its own. A worker thread imports the
 * module of its task, top-level code included, so a worker task lives in a module without side
 * effects: no server, no runner, no connection made at import. The service imports it from here.
 */
import { createHash } from 'node:crypto';
import { defineTask } from 'leasehold';

/** Burns CPU: on a worker thread it stalls neither the service nor the leases of scheduled jobs. */
export const buildReport = defineTask({
  id: 'build-report',
  executor: 'reports',
  module: import.meta.url, // the thread imports this module, not the service's
  run(order: { id: string; lines: number }, ctx) {
    let digest = order.id;
    for (let i = 0; i < order.lines * 10_000; i++) {
      if (i % 100_000 === 0) ctx.signal.throwIfAborted();
      digest = createHash('sha256').update(digest).digest('hex');
    }
    return { orderId: order.id, digest };
  },
});
