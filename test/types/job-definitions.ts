/**
 * Types catch what `leasehold check` catches: compiled by `npm run check` (tsc --strict), never
 * run. Each line marked `@ts-expect-error` is a definition the checks refuse, and tsc must
 * refuse it too (an unused marker fails the compile); every other line must compile.
 */
import { Scheduled, createRunner, defineJob, defineTask, fromEnv, parseDuration, type Duration, type JobContext, type JobDefinition } from '../../src/index.js';

const run = (): void => undefined;

// Good definitions: each schedule kind with its own options, durations as milliseconds or
// strings with a unit, and settings read from the environment.
export const good: JobDefinition[] = [
  defineJob({ id: 'cron', scope: 'installation', cron: '0 */5 * * * *', zone: 'Europe/Berlin', lease: '2m', misfireGrace: '30s', timeout: '10m', run }),
  defineJob({ id: 'rate', fixedRate: '30s', initialDelay: '10s', run }),
  defineJob({ id: 'rate-ms', fixedRate: 30_000, initialDelay: 0, timeout: 1_500, run }),
  defineJob({ id: 'delay', fixedDelay: '1.5h', run: (ctx) => ctx.signal.throwIfAborted() }),
  defineJob({ id: 'units', fixedDelay: '500ms', timeout: '1d', retry: { attempts: 3, backoff: { initial: '1s', max: '1m' } }, run }),
  defineJob({ id: 'cron-env', cron: fromEnv('DIGEST_CRON', '0 0 8 * * *'), zone: fromEnv('DIGEST_ZONE', 'UTC'), run }),
  defineJob({ id: 'rate-env', fixedRate: fromEnv('RATE', '5m'), run }),
  defineJob({ id: 'rate-env-ms', fixedDelay: fromEnv('DELAY', 5_000), run }),
  { id: 'plain', scope: 'installation', cron: '0 0 3 * * *', run },
];

export const bad: unknown[] = [
  // @ts-expect-error -- two schedules: cron with fixedRate
  defineJob({ id: 'two', cron: '0 */5 * * * *', fixedRate: '5m', run }),
  // @ts-expect-error -- two schedules: fixedRate with fixedDelay
  defineJob({ id: 'two-durations', fixedRate: '5m', fixedDelay: '5m', run }),
  // @ts-expect-error -- no schedule at all
  defineJob({ id: 'none', run }),
  // @ts-expect-error -- an unknown key (`interval` is no schedule)
  defineJob({ id: 'interval', fixedRate: '5m', interval: '5m', run }),
  // @ts-expect-error -- an unknown key in place of a schedule
  defineJob({ id: 'interval-only', interval: '5m', run }),
  // @ts-expect-error -- a zone on a fixedRate job
  defineJob({ id: 'zoned', fixedRate: '1m', zone: 'Europe/Berlin', run }),
  // @ts-expect-error -- a zone on a fixedDelay job
  defineJob({ id: 'zoned-delay', fixedDelay: '1m', zone: 'UTC', run }),
  // @ts-expect-error -- an initial delay on a cron job
  defineJob({ id: 'cron-delay', cron: '0 0 * * * *', initialDelay: '10s', run }),
  // @ts-expect-error -- a malformed duration: a unit spelled out
  defineJob({ id: 'spelled', fixedRate: '5 min', run }),
  // @ts-expect-error -- a malformed duration: no number
  defineJob({ id: 'no-number', fixedDelay: 'soon', run }),
  // @ts-expect-error -- a malformed duration: an unknown unit
  defineJob({ id: 'weeks', fixedRate: '2w', run }),
  // @ts-expect-error -- a malformed duration in another field
  defineJob({ id: 'bad-timeout', fixedRate: '1m', timeout: '10 minutes', run }),
  // @ts-expect-error -- a malformed duration in the retry backoff
  defineJob({ id: 'bad-backoff', fixedRate: '1m', retry: { attempts: 2, backoff: '1 sec' }, run }),
  // @ts-expect-error -- a setting whose default is a malformed duration
  defineJob({ id: 'bad-setting', fixedRate: fromEnv('RATE', '5 min'), run }),
  // @ts-expect-error -- a cron is a string, not a number
  defineJob({ id: 'numeric-cron', cron: 5_000, run }),
  // @ts-expect-error -- a scope that does not exist
  defineJob({ id: 'scope', scope: 'cluster', cron: '0 0 * * * *', run }),
];

// @Scheduled takes the same union, without `id` (optional) and `run` (the method).
export class Decorated {
  @Scheduled({ cron: '0 0 3 * * *', zone: 'Europe/Berlin' })
  nightly(ctx: JobContext): void {
    ctx.log.info('nightly');
  }

  @Scheduled({ id: 'explicit', fixedRate: '30s', initialDelay: 1_000 })
  often(): void {}

  @Scheduled({ fixedDelay: fromEnv('SWEEP_DELAY', '1m') })
  sweep(): void {}

  // @ts-expect-error -- cron with fixedRate
  @Scheduled({ cron: '0 0 3 * * *', fixedRate: '1m' })
  twoSchedules(): void {}

  // @ts-expect-error -- a zone on a fixedRate job
  @Scheduled({ fixedRate: '1m', zone: 'UTC' })
  zoned(): void {}

  // @ts-expect-error -- an unknown key
  @Scheduled({ fixedRate: '1m', interval: '1m' })
  unknownKey(): void {}

  // @ts-expect-error -- a malformed duration
  @Scheduled({ fixedRate: '5 min' })
  spelled(): void {}
}

// Durations elsewhere take the same type; parseDuration reads any string (it checks at run time).
export const durations: Duration[] = [500, '500ms', '10s', '5m', '1h', '1d', '1.5h'];
// @ts-expect-error -- a malformed duration
export const badDuration: Duration = '5 min';
export const parsed: number = parseDuration(String(process.env['GRACE'] ?? '10s'));
export const task = defineTask({ id: 'typed-task', timeout: '10s', run });
// @ts-expect-error -- a task's timeout is a duration too
export const badTask = defineTask({ id: 'bad-task', timeout: '10 sec', run });
export const runner = createRunner({ shutdownGrace: '30s', executors: { mail: { kind: 'queue', backoff: '2s', lease: 30_000 } } });
// @ts-expect-error -- an executor's durations too
createRunner({ executors: { mail: { kind: 'queue', backoff: '2 seconds' } } });

// runner.add takes a plain object declared before it is added, whose scope and durations
// TypeScript has widened to `string` (checked when added); a literal still has to be right.
const nightly = { id: 'nightly', scope: 'installation', cron: '0 0 3 * * *', lease: '1m', run };
runner.add(nightly);
for (const job of [nightly, { id: 'refresh', fixedRate: '30s', run }]) runner.add(job);
runner.add({ id: 'inline', scope: 'installation', fixedRate: '1m', retry: { attempts: 2, backoff: '1s' }, run });
// @ts-expect-error -- a literal malformed duration
runner.add({ id: 'spelled', fixedRate: '5 min', run });
// @ts-expect-error -- a literal malformed duration beside good ones
runner.add({ id: 'timeout', fixedRate: '5m', timeout: '1 hour', run });
// @ts-expect-error -- two schedules
runner.add({ id: 'two', cron: '0 0 3 * * *', fixedDelay: '1m', run });
// @ts-expect-error -- an unknown key
runner.add({ id: 'interval', fixedRate: '1m', interval: '1m', run });
