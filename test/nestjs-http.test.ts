/**
 * The status routes through a Nest application's own HTTP server, on Nest's Express adapter
 * (with `leasehold/express`) and on its fastify adapter (with the runner's fastify plugin): the
 * app's own route answers beside them, and the routes keep their tokens and node header
 * (test/helpers/nest.ts, which test/nestjs-v11.test.ts runs on Nest 11's Express adapter). The
 * fixture is compiled by tsc as a Nest project is; `npm run build` first.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { ROOT } from './helpers/node.js';
import { assertStatusRoutesServed, compileNestFixture } from './helpers/nest.js';
import { pkg } from './helpers/package.js';

let redis: TestRedis;
let dir: string;
before(async () => {
  redis = await startRedis();
  dir = compileNestFixture(join(ROOT, 'test', 'fixtures', 'nestjs'), ['http-app.ts', 'http-express.ts', 'http-fastify.ts']);
});
after(async () => {
  await redis.stop();
});

for (const adapter of ['express', 'fastify']) {
  test(`the status routes answer through a Nest app on its ${adapter} adapter`, async () => {
    const { nest } = await assertStatusRoutesServed(join(dir, `http-${adapter}.js`), redis.url);
    assert.deepEqual(nest, { core: pkg.devDependencies['@nestjs/core'], adapter: pkg.devDependencies[`@nestjs/platform-${adapter}`] });
  });
}
