/**
 * `LeaseholdModule`: a Nest module that makes a leasehold runner, finds the `@Cron`,
 * `@Interval` and `@Timeout` methods of the application's providers and controllers, and runs
 * them as leasehold jobs with the application: started once it has bootstrapped, stopped with
 * the grace for runs in progress when it shuts down.
 * @module
 */
import { Inject, type DynamicModule, type FactoryProvider, type ModuleMetadata } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, MetadataScanner } from '@nestjs/core';
import { createRunner, type JobScope, type Runner, type RunnerOptions } from '../index.js';
import { completeClock } from '../clock.js';
import { LeaseholdExplorer } from './explorer.js';
import { SchedulerRegistry } from './registry.js';

/** The injection token of the module's runner: `@Inject(LEASEHOLD_RUNNER)` or {@link InjectRunner}. */
export const LEASEHOLD_RUNNER = Symbol.for('leasehold.nestjs.runner');
const OPTIONS = Symbol.for('leasehold.nestjs.options');

/** The module's options: the runner's, and the scope of a job that names none. */
export interface LeaseholdModuleOptions extends RunnerOptions {
  /**
   * The scope of a `@Cron` or `@Interval` that names none. Default `installation`: once per
   * tick across every process on the Redis, which is what a service scaled out to several
   * replicas wants of a scheduled job (with @nestjs/schedule each replica runs it). A method
   * that must run in every process (refreshing an in-memory cache) says `scope: 'instance'`.
   */
  readonly defaultScope?: JobScope;
}

/** What `LeaseholdModule.forRootAsync` takes: options made by a factory with injected dependencies. */
export interface LeaseholdModuleAsyncOptions {
  /** Modules whose providers the factory needs (a ConfigModule). */
  readonly imports?: ModuleMetadata['imports'];
  /** Makes the options. */
  readonly useFactory: (...args: never[]) => LeaseholdModuleOptions | Promise<LeaseholdModuleOptions>;
  /** The tokens of the factory's arguments. */
  readonly inject?: FactoryProvider['inject'];
}

/** Injects the module's {@link Runner} into a constructor parameter. */
export function InjectRunner(): PropertyDecorator & ParameterDecorator {
  return Inject(LEASEHOLD_RUNNER);
}

/**
 * The leasehold module: import it once, in the root module. It is global: the
 * {@link SchedulerRegistry} and the runner ({@link LEASEHOLD_RUNNER}) can be injected anywhere.
 */
export class LeaseholdModule {
  /** The module with options given now. */
  static forRoot(options: LeaseholdModuleOptions = {}): DynamicModule {
    return LeaseholdModule.build([], { provide: OPTIONS, useValue: options });
  }

  /** The module with options made by a factory (`imports`, `useFactory`, `inject`). */
  static forRootAsync(options: LeaseholdModuleAsyncOptions): DynamicModule {
    return LeaseholdModule.build(options.imports ?? [], { provide: OPTIONS, useFactory: options.useFactory as (...args: unknown[]) => unknown, inject: options.inject ?? [] });
  }

  private static build(imports: NonNullable<ModuleMetadata['imports']>, options: NonNullable<ModuleMetadata['providers']>[number]): DynamicModule {
    return {
      module: LeaseholdModule,
      global: true,
      imports: [DiscoveryModule, ...imports],
      providers: [
        options,
        { provide: LEASEHOLD_RUNNER, useFactory: (o: LeaseholdModuleOptions) => createRunner(withoutModuleOptions(o)), inject: [OPTIONS] },
        { provide: SchedulerRegistry, useFactory: (runner: Runner, o: LeaseholdModuleOptions) => new SchedulerRegistry(runner, o.defaultScope ?? 'installation'), inject: [LEASEHOLD_RUNNER, OPTIONS] },
        {
          provide: LeaseholdExplorer,
          useFactory: (discovery: DiscoveryService, scanner: MetadataScanner, runner: Runner, registry: SchedulerRegistry, o: LeaseholdModuleOptions) => new LeaseholdExplorer(discovery, scanner, runner, registry, o.defaultScope ?? 'installation', completeClock(o.clock)),
          inject: [DiscoveryService, MetadataScanner, LEASEHOLD_RUNNER, SchedulerRegistry, OPTIONS],
        },
      ],
      exports: [LEASEHOLD_RUNNER, SchedulerRegistry],
    };
  }
}

/** What `ScheduleModule.forRoot` takes: @nestjs/schedule's options (accepted, not needed) and leasehold's. */
export interface ScheduleModuleOptions extends LeaseholdModuleOptions {
  /** Accepted for compatibility: `@Cron` methods are always found. */
  readonly cronJobs?: boolean;
  /** Accepted for compatibility: `@Interval` methods are always found. */
  readonly intervals?: boolean;
  /** Accepted for compatibility: `@Timeout` methods are always found. */
  readonly timeouts?: boolean;
}

/**
 * {@link LeaseholdModule} under @nestjs/schedule's name, so that migrating is changing the
 * import: `ScheduleModule.forRoot()` coordinates through the Redis at `REDIS_URL` (from the
 * environment) unless the options give one.
 */
export class ScheduleModule extends LeaseholdModule {
  /** The module, with the Redis of `REDIS_URL` unless the options say otherwise. */
  static override forRoot(options: ScheduleModuleOptions = {}): DynamicModule {
    const { cronJobs: _c, intervals: _i, timeouts: _t, ...rest } = options;
    const fromEnv = process.env['REDIS_URL'];
    const redis = rest.redisUrl ?? rest.redis ?? rest.redisClusterNodes ?? rest.redisSentinels;
    return { ...LeaseholdModule.forRoot(redis === undefined && fromEnv ? { ...rest, redisUrl: fromEnv } : rest), module: ScheduleModule };
  }
}

function withoutModuleOptions(o: LeaseholdModuleOptions): RunnerOptions {
  const { defaultScope: _scope, ...runner } = o;
  return runner;
}
