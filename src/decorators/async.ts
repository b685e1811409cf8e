/**
 * `@Async`: a method decorator (standard, or under `experimentalDecorators`) that makes every call of a method submit
 * a task to an executor and return at once a promise of its result. The decorator replaces the
 * method with one that submits; `runner.register(instance)` registers the task (named
 * `ClassName.method`, as a job is) and binds the instance to the runner, so that its calls
 * reach that runner's executor. A call before the instance is registered rejects with
 * `invalidState`: there is no executor to run it on yet, and running it inline instead would
 * quietly give up what the decorator promises (a bounded executor, a queue that survives a node).
 * On a `worker` executor a call runs in a worker thread, on the instance the method's module
 * makes there (see `lookup.ts`).
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { callerFile } from './caller.js';
import type { Duration } from '../schedule/duration.js';
import { legacyMethod, type AsyncDecorator } from './modes.js';

/** What `@Async` takes. */
export interface AsyncOptions {
  /** The executor the method's calls run on, by name. Default `default` (an event-loop executor unless configured otherwise). */
  readonly executor?: string;
  /** The task's id. Default `ClassName.method`, qualified with a namespace when two registered classes share a name. */
  readonly id?: string;
  /** Abort a call after this long (default: its executor's timeout). */
  readonly timeout?: Duration;
  /**
   * On a `worker` executor: the module a worker thread loads to run the method (its
   * `import.meta.url`), which exports an instance of the class. `leasehold start` fills it in with
   * the jobs module.
   */
  readonly module?: string;
}

/** One `@Async` on a method, as recorded. */
export interface AsyncDeclaration {
  readonly options: AsyncOptions;
  /** The method's name. */
  readonly method: string;
  /** The method as written (what the task runs, with `this` bound to the registered instance). */
  readonly original: (this: object, ...args: unknown[]) => unknown;
  /** The file the decorated class was declared in, when it can be told (a stack frame). */
  readonly file: string | undefined;
}

/** Submits one call of a registered `@Async` method: the arguments are the task's payload. */
export type AsyncCall = (args: unknown[]) => Promise<unknown>;

/** Where a replaced method keeps its `@Async` declaration (a registered symbol, as `@Scheduled`'s). */
const DECLARED = Symbol.for('leasehold.async');
/** Where a registered instance keeps how each of its `@Async` methods submits. */
const BOUND = Symbol.for('leasehold.async.bound');

/** The `@Async` declaration of a method, or undefined when it has none. */
export function asyncOf(method: unknown): AsyncDeclaration | undefined {
  if (typeof method !== 'function') return undefined;
  const d: unknown = (method as unknown as Record<symbol, unknown>)[DECLARED];
  return typeof d === 'object' && d !== null ? (d as AsyncDeclaration) : undefined;
}

/** Binds an instance's `@Async` method to the runner that registered it (again, after a rename). */
export function bindAsync(instance: object, method: string, call: AsyncCall): void {
  let calls = (instance as Record<symbol, unknown>)[BOUND] as Map<string, AsyncCall> | undefined;
  if (!calls) {
    calls = new Map();
    Object.defineProperty(instance, BOUND, { value: calls, enumerable: false });
  }
  calls.set(method, call);
}

function boundCall(instance: unknown, method: string): AsyncCall | undefined {
  if (typeof instance !== 'object' || instance === null) return undefined;
  return ((instance as Record<symbol, unknown>)[BOUND] as Map<string, AsyncCall> | undefined)?.get(method);
}

/**
 * Makes a method asynchronous work: each call submits a task (its arguments as the payload) to
 * the executor named, and returns at once a promise of the method's result, run there with
 * `this` bound to the instance. The task exists once the instance is registered
 * (`runner.register(instance)`); a call before that rejects with `invalidState`. On a `queue`
 * executor the arguments and the result must be JSON, and the node that takes the task runs it
 * on its own registered instance. On a `worker` executor a call runs in a worker thread, on the
 * instance that the module named by `module` exports (or, under `leasehold start`, that the jobs
 * module makes): the arguments and the result cross by structured clone. Not on a `@Scheduled`
 * method (see `runner.register`).
 *
 * @example
 * ```ts
 * import { Async } from 'leasehold';
 *
 * class Mailer {
 *   @Async({ executor: 'mail' })
 *   async send(to: string, subject: string): Promise<string> {
 *     return `sent ${subject} to ${to}`;
 *   }
 * }
 * ```
 * @param options - The executor and the task's options; see {@link AsyncOptions}.
 */
export function Async(options: AsyncOptions = {}): AsyncDecorator {
  const file = callerFile(Async);
  const submitting = (method: unknown, name: string): ((this: unknown, ...args: unknown[]) => Promise<unknown>) => {
    const replacement = function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const call = boundCall(this, name);
      if (!call) {
        const owner: unknown = (this as { constructor?: unknown } | undefined)?.constructor;
        const className = typeof owner === 'function' && owner.name ? owner.name : 'anonymous';
        return Promise.reject(
          new LeaseholdError(ErrorCodes.invalidState, `@Async method ${className}.${name} called before its instance was registered: call runner.register(instance) first, so its calls have an executor to run on`),
        );
      }
      return call(args);
    };
    const declaration: AsyncDeclaration = { options, method: name, original: method as AsyncDeclaration['original'], file };
    Object.defineProperty(replacement, DECLARED, { value: declaration, enumerable: false });
    Object.defineProperty(replacement, 'name', { value: name });
    return replacement;
  };
  return function (method: unknown, context: unknown, descriptor?: PropertyDescriptor): unknown {
    // Compiled with `experimentalDecorators`: called as (prototype, key, descriptor).
    const legacy = legacyMethod(method, context, descriptor, (className, name) => `@Async on ${className}.${name}: only a public instance method can be @Async (it runs with this bound to a registered instance)`);
    if (legacy) {
      legacy.descriptor.value = submitting(legacy.descriptor.value, legacy.name);
      return undefined;
    }
    const ctx = context as ClassMethodDecoratorContext;
    const name = String(ctx.name);
    if (ctx.kind !== 'method' || ctx.private || ctx.static || typeof ctx.name !== 'string') {
      throw new LeaseholdError(ErrorCodes.invalidDecorator, `@Async on ${name}: only a public instance method can be @Async (it runs with this bound to a registered instance)`);
    }
    return submitting(method, name);
  } as AsyncDecorator;
}
