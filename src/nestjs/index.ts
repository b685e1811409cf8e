/**
 * leasehold for NestJS (`leasehold/nestjs`): a drop-in for @nestjs/schedule whose `@Cron`,
 * `@Interval` and `@Timeout` run as leasehold jobs, once per tick across every process of the
 * application on one Redis. Needs `@nestjs/common` and `@nestjs/core` (11 or 12).
 *
 * @example
 * ```ts
 * import { Injectable, Module } from '@nestjs/common';
 * import { Cron, CronExpression, LeaseholdModule } from 'leasehold/nestjs';
 *
 * @Injectable()
 * export class Reports {
 *   @Cron(CronExpression.EVERY_DAY_AT_8AM, { timeZone: 'Europe/Berlin' })
 *   async digest(): Promise<void> {}
 * }
 *
 * @Module({ imports: [LeaseholdModule.forRoot({ redisUrl: process.env.REDIS_URL })], providers: [Reports] })
 * export class AppModule {}
 * ```
 *
 * @packageDocumentation
 */
export { Cron, Interval, Timeout, type CronOptions, type LeaseholdJobOptions, type TimeoutOptions } from './declarations.js';
export { CronExpression } from './expressions.js';
export { SchedulerRegistry, CronJob, ScheduledWork, type CronTimeView } from './registry.js';
export { LeaseholdModule, ScheduleModule, LEASEHOLD_RUNNER, InjectRunner, type LeaseholdModuleOptions, type LeaseholdModuleAsyncOptions, type ScheduleModuleOptions } from './module.js';
