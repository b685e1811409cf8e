/**
 * A runner's Redis connections, all made by the composition root: while it runs, the server
 * sees each by its role's name (lease, stats for the status and the executors board, sub for the
 * control channel, queue for a queue executor); once `stop()` resolves, none is left open.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRunner, defineTask } from '../src/index.js';
import { redisConnections } from '../src/create/connections.js';
import { memoryLogger } from './helpers/log.js';
import { freePort, startRedis, type TestRedis } from './helpers/redis.js';
import { until } from './helpers/wait.js';

let server: TestRedis;
before(async () => {
  server = await startRedis();
});
after(async () => {
  await server.stop();
});

/** The names of the server's leasehold connections, one entry per connection. */
async function leaseholdClients(): Promise<string[]> {
  const admin = server.client();
  const list = String(await admin.call('CLIENT', 'LIST'));
  return list
    .split('\n')
    .map((line) => /(?:^| )name=(\S*)/.exec(line)?.[1] ?? '')
    .filter((name) => name.startsWith('leasehold-'))
    .sort();
}

test('a runner opens its connections by role and closes every one of them on stop', async () => {
  const runner = createRunner({ redisUrl: server.url, prefix: 'conn', instanceId: 'conn-1', logger: memoryLogger('silent').logger, executors: { mail: { kind: 'queue' } } });
  const mail = defineTask({ id: 'mail', executor: 'mail', run: (to: string) => `sent to ${to}` });
  const local = defineTask({ id: 'local', run: () => 'done' });
  runner.addTask(mail);
  await runner.start();
  assert.equal(await (await runner.submit(mail, 'ops')).result(), 'sent to ops');
  assert.equal(await (await runner.submit(local, undefined)).result(), 'done');
  // The board is written at the first loop executor's first figures.
  await runner.executors();
  await until('every role connected', async () => {
    const names = new Set(await leaseholdClients());
    return ['leasehold-lease', 'leasehold-stats', 'leasehold-sub', 'leasehold-queue'].every((n) => names.has(n));
  });
  await runner.stop();
  await until('no connection left', async () => (await leaseholdClients()).length === 0);
});

test('the factory keeps the last error of a connection for the messages, and its close never throws', async () => {
  const connections = redisConnections({ url: `redis://127.0.0.1:${await freePort()}` });
  connections.open('command');
  await until('an error is kept', () => connections.lastError() !== undefined);
  assert.match(connections.lastError() ?? '', /ECONNREFUSED/);
  await connections.close();
});
