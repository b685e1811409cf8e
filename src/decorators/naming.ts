/**
 * From decorated instances to named jobs and tasks: which methods of an instance are
 * `@Scheduled` or `@Async`, the checks of each (one schedule, at most one parameter, every
 * `defineJob` check, never both decorators), and the naming rule: `ClassName.method`, or
 * `<namespace>.ClassName.method` for every class whose simple name another registered class
 * shares; an explicit `id` wins. Registering them with a runner is `register.ts`.
 * @module
 */
import { dirname, extname, relative, sep } from 'node:path';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { JOB_ID_PATTERN, normalizeJob, type JobContext, type JobDefinition } from '../schedule/job.js';
import type { Duration } from '../schedule/duration.js';
import { scheduledOf, type ScheduledDeclaration } from './scheduled.js';
import { asyncOf, type AsyncDeclaration } from './async.js';

/** Options of `runner.register`. */
export interface RegisterOptions {
  /**
   * Qualifies the instance's job names (`<namespace>.ClassName.method`) when another
   * registered class has the same name: dot-separated letters, digits, `_`, `-`.
   */
  readonly namespace?: string;
}

/** A decorated method of an instance. */
interface DecoratedMethod {
  readonly method: string;
  readonly declarations: readonly ScheduledDeclaration[];
  /** Its `@Async`, if any. */
  readonly async: AsyncDeclaration | undefined;
  readonly fn: (this: object, ctx: JobContext) => unknown;
}

/** An instance as registered: its class name, namespace and decorated methods. */
export interface Registration {
  readonly instance: object;
  readonly className: string;
  readonly namespace: string | undefined;
  readonly methods: readonly DecoratedMethod[];
}

/** A job made from a decorated method. */
export interface DecoratedJob {
  readonly registration: Registration;
  readonly definition: JobDefinition;
}

/** A task made from an `@Async` method: its handler takes the call's arguments as the payload. */
export interface AsyncTask {
  readonly id: string;
  readonly executor?: string;
  readonly timeout?: Duration;
  /** The module a worker thread loads the method from. */
  readonly module?: string;
  readonly run: (args: unknown[]) => unknown;
}

/** A task made from an `@Async` method, and which method of which registration it is. */
export interface DecoratedTask {
  readonly registration: Registration;
  readonly method: string;
  readonly definition: AsyncTask;
}

const NAMESPACE = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;

/** The decorated methods of an object (its class's and its ancestors'), nearest first. */
function decoratedMethods(instance: object): DecoratedMethod[] {
  const found = new Map<string, DecoratedMethod>();
  for (let proto: unknown = Object.getPrototypeOf(instance); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const key of Object.getOwnPropertyNames(proto)) {
      if (key === 'constructor' || found.has(key)) continue;
      const value = Object.getOwnPropertyDescriptor(proto, key)?.value as unknown;
      const async = asyncOf(value);
      const declarations = scheduledOf(value) ?? scheduledOf(async?.original);
      if (declarations || async) found.set(key, { method: key, declarations: declarations ?? [], async, fn: (async?.original ?? value) as DecoratedMethod['fn'] });
    }
  }
  return [...found.values()];
}

/** Whether a value is an instance with at least one `@Scheduled` or `@Async` method. */
export function isDecorated(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && decoratedMethods(value).length > 0;
}

/** The file an instance's class is declared in, as its `@Scheduled` or `@Async` declarations recorded it. */
export function decoratedFile(instance: object): string | undefined {
  for (const m of decoratedMethods(instance)) {
    const file = m.declarations[0]?.file ?? m.async?.file;
    if (file !== undefined) return file;
  }
  return undefined;
}

/**
 * Reads an instance's decorated methods.
 * @throws LeaseholdError `invalidDecorator` when it is no object, has no `@Scheduled` method, or the namespace is malformed.
 */
export function collect(instance: unknown, options: RegisterOptions = {}): Registration {
  if (typeof instance !== 'object' || instance === null || Array.isArray(instance)) {
    throw new LeaseholdError(ErrorCodes.invalidDecorator, `register: expected an instance of a class with @Scheduled or @Async methods, got ${instance === null ? 'null' : Array.isArray(instance) ? 'an array' : typeof instance}`);
  }
  const ctor: unknown = (instance as { constructor?: unknown }).constructor;
  const className = typeof ctor === 'function' && ctor.name ? ctor.name : 'anonymous';
  const methods = decoratedMethods(instance);
  if (methods.length === 0) throw new LeaseholdError(ErrorCodes.invalidDecorator, `register: class ${className} has no @Scheduled or @Async method`);
  const namespace = options.namespace;
  if (namespace !== undefined && (typeof namespace !== 'string' || !NAMESPACE.test(namespace))) {
    throw new LeaseholdError(ErrorCodes.invalidDecorator, `register ${className}: field "namespace": ${JSON.stringify(namespace)} must be dot-separated letters, digits, "_" or "-"`);
  }
  return { instance, className, namespace, methods };
}

/** `Class.method`, and the job id when it differs: how an error names a decorated method. */
function label(className: string, method: string, id?: string): string {
  const name = `${className}.${method}`;
  return id === undefined || id === name ? `job ${JSON.stringify(name)}` : `job ${JSON.stringify(id)} (${name})`;
}

/**
 * Makes the jobs and tasks of a set of registrations, named by the rule above, each job checked
 * as `defineJob` checks it. Returns those that passed and an error for each that did not.
 */
export function nameJobs(registrations: readonly Registration[]): { jobs: DecoratedJob[]; tasks: DecoratedTask[]; errors: LeaseholdError[] } {
  const byName = new Map<string, Registration[]>();
  for (const r of registrations) byName.set(r.className, [...(byName.get(r.className) ?? []), r]);
  const jobs: DecoratedJob[] = [];
  const tasks: DecoratedTask[] = [];
  const errors: LeaseholdError[] = [];
  const taskIds = new Map<string, string>();
  const seen = new Map<string, string>();
  for (const r of registrations) {
    const shared = (byName.get(r.className)?.length ?? 0) > 1;
    if (shared && r.namespace === undefined) {
      errors.push(new LeaseholdError(ErrorCodes.duplicateJob, `class ${r.className}: another registered class has the same name, so both take qualified names <namespace>.${r.className}.<method>: register each with a namespace (runner.register(instance, { namespace }))`));
      continue;
    }
    const prefix = shared ? `${r.namespace}.${r.className}` : r.className;
    for (const m of r.methods) {
      const first = m.declarations[0];
      if (m.async && !first) {
        const task = asyncTask(r, m, m.async, prefix, taskIds);
        if (task instanceof LeaseholdError) errors.push(task);
        else tasks.push(task);
        continue;
      }
      const explicitId = first?.options.id;
      const at = label(r.className, m.method, explicitId ?? `${prefix}.${m.method}`);
      if (m.declarations.length > 1) {
        errors.push(new LeaseholdError(ErrorCodes.invalidDecorator, `${at}: field "@Scheduled": ${m.declarations.length} schedules on one method: give it exactly one @Scheduled`));
        continue;
      }
      if (!first) continue;
      if (m.async) {
        errors.push(
          new LeaseholdError(
            ErrorCodes.invalidDecorator,
            `${at}: field "@Async": a @Scheduled method cannot be @Async: its run would end as soon as the work was queued, so runs could overlap and an installation lease be released while the work goes on; call an @Async method from the scheduled one and await it`,
          ),
        );
        continue;
      }
      if (m.fn.length > 1) {
        errors.push(new LeaseholdError(ErrorCodes.invalidDecorator, `${at}: field "parameters": the method declares ${m.fn.length} parameters; a scheduled method takes the run context as its only argument`));
        continue;
      }
      const { id, ...options } = first.options;
      const fn = m.fn;
      const instance = r.instance;
      const definition = { ...options, id: id ?? `${prefix}.${m.method}`, run: (ctx: JobContext) => fn.call(instance, ctx) } as JobDefinition;
      try {
        normalizeJob(definition);
      } catch (err) {
        if (!(err instanceof LeaseholdError)) throw err;
        // normalizeJob names the job by its id: say which method it is.
        errors.push(new LeaseholdError(err.code, err.message.replace(/^job "[^"]*"/, label(r.className, m.method, definition.id)), { cause: err }));
        continue;
      }
      const other = seen.get(definition.id);
      if (other !== undefined) {
        errors.push(new LeaseholdError(ErrorCodes.duplicateJob, `${at}: field "id": ${other} has the same id`));
        continue;
      }
      seen.set(definition.id, `${r.className}.${m.method}`);
      jobs.push({ registration: r, definition });
    }
  }
  return { jobs, tasks, errors };
}

/** The task of an `@Async` method, named as a job would be, or the error of a bad id. */
function asyncTask(r: Registration, m: DecoratedMethod, d: AsyncDeclaration, prefix: string, seen: Map<string, string>): DecoratedTask | LeaseholdError {
  const id = d.options.id ?? `${prefix}.${m.method}`;
  const at = `task ${JSON.stringify(id)}${id === `${r.className}.${m.method}` ? '' : ` (${r.className}.${m.method})`}`;
  if (typeof id !== 'string' || !JOB_ID_PATTERN.test(id)) return new LeaseholdError(ErrorCodes.invalidTask, `${at}: field "id": must be 1 to 128 letters, digits, ".", "_", "-" or ":"`);
  const other = seen.get(id);
  if (other !== undefined) return new LeaseholdError(ErrorCodes.duplicateTask, `${at}: field "id": ${other} has the same id`);
  seen.set(id, `${r.className}.${m.method}`);
  const original = d.original;
  const instance = r.instance;
  const definition: AsyncTask = {
    id,
    ...(d.options.executor !== undefined ? { executor: d.options.executor } : {}),
    ...(d.options.timeout !== undefined ? { timeout: d.options.timeout } : {}),
    ...(d.options.module !== undefined ? { module: d.options.module } : {}),
    run: (args: unknown[]) => original.apply(instance, Array.isArray(args) ? args : [args]),
  };
  return { registration: r, method: m.method, definition };
}

/**
 * The namespace the CLI gives the classes of a module: its path relative to the jobs module's
 * folder, without extension, `/` as `.` (`billing/cleanup.ts` is `billing.cleanup`); a class
 * of the jobs module itself gets the module's own name.
 */
export function namespaceOf(file: string, jobsModule: string): string | undefined {
  const rel = relative(dirname(jobsModule), file);
  const parts = rel
    .slice(0, rel.length - extname(rel).length)
    .split(sep)
    .filter((p) => p !== '' && p !== '.' && p !== '..')
    .map((p) => p.replace(/[^A-Za-z0-9_-]/g, '_'));
  if (parts.length > 1 && parts[parts.length - 1] === 'index') parts.pop();
  return parts.length > 0 ? parts.join('.') : undefined;
}
