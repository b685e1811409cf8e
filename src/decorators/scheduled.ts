/**
 * `@Scheduled`: a method decorator that declares a method a job, under TypeScript 5's standard
 * decorators and under `experimentalDecorators` alike (no metadata polyfill either way). The decorator only records what it was
 * given, kept on the method itself; `runner.register(instance)` (or a jobs module's default
 * export, under `leasehold start` and `leasehold check`) turns the recorded methods of an
 * instance into jobs, checks them and names them `ClassName.method`.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { callerFile } from './caller.js';
import type { CronJobDefinition, FixedDelayJobDefinition, FixedRateJobDefinition } from '../schedule/job.js';
import { legacyMethod, type ScheduledDecorator } from './modes.js';

/**
 * What `@Scheduled` takes: a job definition without its handler (the method is the handler),
 * and with an optional `id` (default `ClassName.method`). Derived from {@link JobDefinition}, a
 * union by schedule kind, so every job option is a decorator option too, on the kinds it fits.
 */
export type ScheduledOptions = (Omit<CronJobDefinition, 'id' | 'run'> | Omit<FixedRateJobDefinition, 'id' | 'run'> | Omit<FixedDelayJobDefinition, 'id' | 'run'>) & {
  /** The job's id. Default `ClassName.method`, qualified with a namespace when two registered classes share a name. */
  readonly id?: string;
};

/** One `@Scheduled` on a method, as recorded. */
export interface ScheduledDeclaration {
  readonly options: ScheduledOptions;
  /** The method's name. */
  readonly method: string;
  /** The file the decorated class was declared in, when it can be told (a stack frame). */
  readonly file: string | undefined;
}

/**
 * Where a decorated method keeps its `@Scheduled` declarations: a registered symbol, so that
 * a second copy of leasehold in the process (a bundled one) reads what the first recorded.
 */
const DECLARED = Symbol.for('leasehold.scheduled');

// `@Async` (async.ts) is recorded on the method that replaces the decorated one, keyed the same
// way; `register.ts` reports `@Async` on a `@Scheduled` method as an error of that method.

/** The `@Scheduled` declarations of a method, or undefined when it has none. */
export function scheduledOf(method: unknown): readonly ScheduledDeclaration[] | undefined {
  if (typeof method !== 'function') return undefined;
  const list: unknown = (method as unknown as Record<symbol, unknown>)[DECLARED];
  return Array.isArray(list) ? (list as ScheduledDeclaration[]) : undefined;
}

/**
 * Makes a method a job: it runs on the schedule given (exactly one of `cron`, `fixedRate`,
 * `fixedDelay`) with `this` bound to its instance and the run's `JobContext` as its
 * only argument. The job exists once the instance is registered: `runner.register(instance)`,
 * or the instance in a jobs module's default export.
 *
 * @example
 * ```ts
 * import { Scheduled, type JobContext } from 'leasehold';
 *
 * class Cleanup {
 *   @Scheduled({ scope: 'installation', cron: '0 0 3 * * *', zone: 'Europe/Berlin' })
 *   async purge(ctx: JobContext): Promise<void> {
 *     ctx.log.info('purging');
 *   }
 * }
 * ```
 * @param options - The job's options; see {@link ScheduledOptions}.
 */
export function Scheduled(options: ScheduledOptions): ScheduledDecorator {
  const file = callerFile(Scheduled);
  const record = (method: unknown, name: string): void => {
    const list = scheduledOf(method);
    const entry: ScheduledDeclaration = { options, method: name, file };
    if (list) (list as ScheduledDeclaration[]).push(entry);
    else Object.defineProperty(method, DECLARED, { value: [entry], enumerable: false });
  };
  return function (method: unknown, context: unknown, descriptor?: PropertyDescriptor): void {
    // Compiled with `experimentalDecorators`: called as (prototype, key, descriptor).
    const legacy = legacyMethod(method, context, descriptor, refusal);
    if (legacy) {
      record(legacy.descriptor.value, legacy.name);
      return;
    }
    const ctx = context as ClassMethodDecoratorContext;
    const name = String(ctx.name);
    if (ctx.kind !== 'method') {
      throw new LeaseholdError(ErrorCodes.invalidDecorator, `@Scheduled on ${String(ctx.kind)} ${name}: only a method can be a job`);
    }
    if (ctx.private || ctx.static || typeof ctx.name !== 'string') {
      // Said once the class is known: at its definition for a static method, at construction for a private one.
      ctx.addInitializer(function (this: unknown) {
        const owner: unknown = ctx.static ? this : (this as { constructor?: unknown }).constructor;
        const className = typeof owner === 'function' && owner.name ? owner.name : 'anonymous';
        throw new LeaseholdError(
          ErrorCodes.invalidDecorator,
          `job "${className}.${name}": field "@Scheduled": a scheduled method must be a public instance method (it runs with this bound to a registered instance), not a ${ctx.static ? 'static' : 'private'} one`,
        );
      });
      return;
    }
    record(method, name);
  } as ScheduledDecorator;
}

function refusal(className: string, name: string, why: 'static' | 'symbol' | 'not a method'): string {
  if (why === 'not a method') return `@Scheduled on ${className}.${name}: only a method can be a job`;
  return `job "${className}.${name}": field "@Scheduled": a scheduled method must be a public instance method (it runs with this bound to a registered instance), not a ${why === 'static' ? 'static' : 'symbol-named'} one`;
}
