/**
 * `@Cron`, `@Interval` and `@Timeout`: method decorators with @nestjs/schedule's signatures,
 * plus leasehold's job options. They only record what they were given, on the method itself;
 * the module's explorer finds the methods on the instances Nest created and makes them jobs.
 * They are `experimentalDecorators` decorators, as every Nest decorator is.
 * @module
 */
import { ErrorCodes, LeaseholdError, type Duration, type JobScope, type RetryOptions } from '../index.js';

/** leasehold's options of a job, on `@Cron` and `@Interval`. */
export interface LeaseholdJobOptions {
  /**
   * `installation`: once per tick across every process on the Redis; `instance`: in every
   * process, as @nestjs/schedule runs it. Default: the module's `defaultScope` (`installation`).
   */
  readonly scope?: JobScope;
  /** installation only: lease time, extended every half of it while the run goes on. Default 30s. */
  readonly lease?: Duration;
  /** Abort a run after this long (its `JobContext.signal` fires). */
  readonly timeout?: Duration;
  /** installation only: how long after its tick a run may still start late. */
  readonly misfireGrace?: Duration;
  /** Retries of a failed run on the same tick. */
  readonly retry?: RetryOptions;
  /** Free text shown in the status. */
  readonly description?: string;
}

/** What `@Cron` takes: @nestjs/schedule's options and leasehold's. */
export type CronOptions = LeaseholdJobOptions & {
  /** The job's id (and its name in the {@link SchedulerRegistry}). Default `ClassName.method`. */
  readonly name?: string;
  /** An IANA zone the expression is read in. Default UTC. */
  readonly timeZone?: string;
  /** A fixed offset from UTC, in minutes, the expression is read in (instead of `timeZone`). */
  readonly utcOffset?: number;
  /** Declared but not started: `schedulerRegistry.getCronJob(name).start()` starts it. */
  readonly disabled?: boolean;
  /** Delay in milliseconds before the job is scheduled, after the application bootstrapped. */
  readonly initialDelay?: number;
  /** Accepted for compatibility: a leasehold job never overlaps itself. */
  readonly waitForCompletion?: boolean;
  /** Accepted for compatibility; leasehold's timers never hold the process open. */
  readonly unrefTimeout?: boolean;
  /** Accepted for compatibility; late ticks follow `misfireGrace`. */
  readonly threshold?: number;
};

/** What `@Timeout` takes besides its name and delay. */
export interface TimeoutOptions {
  /** The executor the call runs on. Default `default`. */
  readonly executor?: string;
  /** Abort the call after this long. */
  readonly timeout?: Duration;
}

/** One decorated method, as recorded. */
export type NestDeclaration =
  | { readonly kind: 'cron'; readonly cronTime: string | Date; readonly options: CronOptions }
  | { readonly kind: 'interval'; readonly name: string | undefined; readonly ms: number; readonly options: LeaseholdJobOptions }
  | { readonly kind: 'timeout'; readonly name: string | undefined; readonly ms: number; readonly options: TimeoutOptions };

const DECLARED = Symbol.for('leasehold.nestjs.schedule');

/** The declaration of a method, or undefined when it has none. */
export function declarationOf(method: unknown): NestDeclaration | undefined {
  if (typeof method !== 'function') return undefined;
  const d: unknown = (method as unknown as Record<symbol, unknown>)[DECLARED];
  return typeof d === 'object' && d !== null ? (d as NestDeclaration) : undefined;
}

function decorator(label: string, declaration: NestDeclaration): MethodDecorator {
  return (target: object, key: string | symbol, descriptor: PropertyDescriptor): void => {
    const owner: unknown = typeof target === 'function' ? target : (target as { constructor?: unknown }).constructor;
    const at = `${typeof owner === 'function' && owner.name ? owner.name : 'anonymous'}.${String(key)}`;
    if (typeof target === 'function' || typeof key !== 'string' || typeof descriptor?.value !== 'function') {
      throw new LeaseholdError(ErrorCodes.invalidDecorator, `${label} on ${at}: only a public instance method of a provider or controller can be scheduled`);
    }
    if (declarationOf(descriptor.value)) throw new LeaseholdError(ErrorCodes.invalidDecorator, `${label} on ${at}: the method has a schedule already: give it one of @Cron, @Interval, @Timeout`);
    Object.defineProperty(descriptor.value, DECLARED, { value: declaration, enumerable: false });
  };
}

/**
 * Makes a method a cron job. Five fields (minute first) or six (seconds first), read as
 * @nestjs/schedule reads them; a `Date` runs the method once at that moment in this process.
 * @param cronTime - The expression (see {@link CronExpression}), or a moment.
 * @param options - @nestjs/schedule's options and leasehold's; see {@link CronOptions}.
 */
export function Cron(cronTime: string | Date, options: CronOptions = {}): MethodDecorator {
  return decorator('@Cron', { kind: 'cron', cronTime, options });
}

function split<O>(args: readonly unknown[]): { name: string | undefined; ms: number; options: O } {
  const [a, b, c] = args;
  if (typeof a === 'string') return { name: a, ms: b as number, options: (c ?? {}) as O };
  return { name: undefined, ms: a as number, options: (b ?? {}) as O };
}

/** Runs the method every `ms` milliseconds (a `fixedRate` job), named `ClassName.method`. */
export function Interval(ms: number, options?: LeaseholdJobOptions): MethodDecorator;
/** Runs the method every `ms` milliseconds (a `fixedRate` job) under the name given. */
export function Interval(name: string, ms: number, options?: LeaseholdJobOptions): MethodDecorator;
export function Interval(...args: [number, LeaseholdJobOptions?] | [string, number, LeaseholdJobOptions?]): MethodDecorator {
  const { name, ms, options } = split<LeaseholdJobOptions>(args);
  return decorator('@Interval', { kind: 'interval', name, ms, options });
}

/** Runs the method once, `ms` milliseconds after the application bootstrapped, in each process. */
export function Timeout(ms: number, options?: TimeoutOptions): MethodDecorator;
/** Runs the method once, `ms` milliseconds after the application bootstrapped, in each process, under the name given. */
export function Timeout(name: string, ms: number, options?: TimeoutOptions): MethodDecorator;
export function Timeout(...args: [number, TimeoutOptions?] | [string, number, TimeoutOptions?]): MethodDecorator {
  const { name, ms, options } = split<TimeoutOptions>(args);
  return decorator('@Timeout', { kind: 'timeout', name, ms, options });
}
