/**
 * Migrating from @nestjs/schedule is changing the imports: a Nest application written for
 * @nestjs/schedule (a cron, an unnamed cron, an interval, a timeout, a cron job added through
 * the SchedulerRegistry) runs as it is, and then with only its import lines changed to
 * leasehold/nestjs, coordinated through Redis: the same jobs run and the registry answers the
 * same. Compiled by tsc as a Nest project is; `npm run build` first.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { assertMigratedSame, compileNestFixture, MIGRATED_FIXTURE, migrateImports, runMigrated } from './helpers/nest.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

test('only the import lines change', () => {
  const before = readFileSync(join(MIGRATED_FIXTURE, 'tasks.ts'), 'utf8').split('\n');
  const after = migrateImports(before.join('\n')).split('\n');
  const changed = before.flatMap((line, i) => (line === after[i] ? [] : [[line, after[i]]]));
  assert.deepEqual(changed, [
    ["import { Cron, CronExpression, Interval, ScheduleModule, SchedulerRegistry, Timeout } from '@nestjs/schedule';", "import { Cron, CronExpression, Interval, ScheduleModule, SchedulerRegistry, Timeout } from 'leasehold/nestjs';"],
    ["import { CronJob } from 'cron';", "import { CronJob } from 'leasehold/nestjs';"],
  ]);
});

test('the application written for @nestjs/schedule runs the same with its imports changed to leasehold/nestjs', async () => {
  const original = await runMigrated(compileNestFixture(MIGRATED_FIXTURE, ['tasks.ts']), {});
  const migrated = await runMigrated(compileNestFixture(MIGRATED_FIXTURE, ['tasks.ts'], migrateImports), { REDIS_URL: redis.url });
  await assertMigratedSame(original, migrated, redis);
});
