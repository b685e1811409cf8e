/**
 * leasehold/nestjs in real Nest applications: three processes of one app on one Redis run an
 * installation `@Cron` once per tick on the instance Nest created (with its injected
 * dependency), keep running it when the holder is killed with SIGKILL, and record a run that
 * outlasts the grace `interrupted` when its process gets SIGTERM with shutdown hooks on;
 * `@Interval` with `scope: 'instance'` and `@Timeout` run in every process; a request-scoped
 * provider with a schedule is refused. The fixture is compiled by tsc as a Nest project is;
 * `npm run build` first.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CronExpression as NestCronExpression } from '@nestjs/schedule';
import { parseCron } from '../src/index.js';
import { CronExpression } from '../src/nestjs/index.js';
import { sixFields } from '../src/nestjs/expressions.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { ROOT, spawnNode } from './helpers/node.js';
import { assertKilledHolderHandsOver, assertSigtermInterrupts, compileNestFixture } from './helpers/nest.js';

let redis: TestRedis;
let app: string;
before(async () => {
  redis = await startRedis();
  app = join(compileNestFixture(join(ROOT, 'test', 'fixtures', 'nestjs'), ['app.ts']), 'app.js');
});
after(async () => {
  await redis.stop();
});

test('three processes of a Nest app run an installation @Cron once per tick on the injected instance, and go on when the holder is killed', async () => {
  await assertKilledHolderHandsOver(app, redis.url);
});

test('SIGTERM with shutdown hooks: a run in progress gets the grace, then is recorded interrupted, and another process takes the next tick', async () => {
  await assertSigtermInterrupts(app, redis.url);
});

test('a request-scoped provider with a @Cron is refused at bootstrap, naming it', async () => {
  const p = spawnNode([app], { REQUEST_SCOPED: '1', LOG_LEVEL: 'warn' }, join(app, '..'));
  const line = await p.waitFor((l) => 'ready' in l, 60_000);
  await p.exited;
  assert.equal(line['ready'], false);
  assert.equal(line['code'], 'invalidDecorator');
  assert.match(String(line['error']), /@Cron on PerRequest\.run: PerRequest is request-scoped .*schedule methods of singleton providers/);
});

test('CronExpression has every name and text of @nestjs/schedule, and each reads as a leasehold cron', () => {
  assert.deepEqual({ ...CronExpression }, { ...NestCronExpression });
  for (const [name, text] of Object.entries(CronExpression)) {
    assert.doesNotThrow(() => parseCron(sixFields(text, name)), name);
  }
  assert.equal(sixFields('*/5 * * * *', 'j'), '0 */5 * * * *', 'five fields: minute first, second 0');
  assert.equal(sixFields('*/10 * * * * *', 'j'), '*/10 * * * * *', 'six fields: seconds first');
  assert.throws(() => sixFields('0 0 13 * 5', 'friday13'), /job "friday13": field "cron": .*restricts both the day of the month and the day of the week/);
});
