/**
 * `@Scheduled`: a TypeScript 5 standard method decorator (no `experimentalDecorators`, no
 * metadata polyfill) that declares a method a job. The decorator only records what it was
 * given, kept on the method itself; `runner.register(instance)` (or a jobs module's default
 * export, under `leasehold start` and `leasehold check`) turns the recorded methods of an
 * instance into jobs, checks them and names them `ClassName.method`.
 * @module
 */
import { fileURLToPath } from 'node:url';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { JobContext, JobDefinition } from '../schedule/job.js';

/**
 * What `@Scheduled` takes: a job definition without its handler (the method is the handler),
 * and with an optional `id` (default `ClassName.method`). Derived from {@link JobDefinition},
 * so every job option is a decorator option too.
 */
export type ScheduledOptions = Omit<JobDefinition, 'id' | 'run'> & {
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
 * `fixedDelay`) with `this` bound to its instance and the run's {@link JobContext} as its
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
export function Scheduled(options: ScheduledOptions) {
  const file = callerFile();
  return function <This, F extends (this: This, ctx: JobContext) => unknown>(method: F, context: ClassMethodDecoratorContext<This, F>): void {
    // Compiled with `experimentalDecorators`, a decorator is called as (prototype, key, descriptor).
    if (typeof context !== 'object' || context === null || !('kind' in context)) {
      throw new LeaseholdError(ErrorCodes.invalidJob, `@Scheduled on ${String(context)}: @Scheduled is a standard TypeScript 5 decorator; turn "experimentalDecorators" off in tsconfig.json`);
    }
    const name = String(context.name);
    if (context.kind !== 'method') {
      throw new LeaseholdError(ErrorCodes.invalidJob, `@Scheduled on ${String(context.kind)} ${name}: only a method can be a job`);
    }
    if (context.private || context.static || typeof context.name !== 'string') {
      // Said once the class is known: at its definition for a static method, at construction for a private one.
      context.addInitializer(function (this: This) {
        const owner: unknown = context.static ? this : (this as { constructor?: unknown }).constructor;
        const className = typeof owner === 'function' && owner.name ? owner.name : 'anonymous';
        throw new LeaseholdError(
          ErrorCodes.invalidJob,
          `job "${className}.${name}": field "@Scheduled": a scheduled method must be a public instance method (it runs with this bound to a registered instance), not a ${context.static ? 'static' : 'private'} one`,
        );
      });
      return;
    }
    const list = scheduledOf(method);
    const entry: ScheduledDeclaration = { options, method: name, file };
    if (list) (list as ScheduledDeclaration[]).push(entry);
    else Object.defineProperty(method, DECLARED, { value: [entry], enumerable: false });
  };
}

/** The file that called `Scheduled(...)`: where the decorated class is declared. */
function callerFile(): string | undefined {
  const holder: { stack?: string } = {};
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 2;
  try {
    Error.captureStackTrace(holder, Scheduled);
  } finally {
    Error.stackTraceLimit = limit;
  }
  const frame = holder.stack?.split('\n').find((l) => /^\s+at /.test(l));
  const m = frame ? /((?:file:\/\/)?\/[^\s()?]+?)(?:\?[^\s():]*)?:\d+:\d+\)?$/.exec(frame) : null;
  if (!m?.[1]) return undefined;
  return m[1].startsWith('file://') ? fileURLToPath(m[1]) : m[1];
}
