/**
 * Registering decorated instances: with a runner ({@link Registrations}, which renames jobs and
 * tasks as classes of the same name join), and from a jobs module's default export
 * ({@link expandExport}). How they are named is `naming.ts`.
 * @module
 */
import { LeaseholdError } from '../errors.js';
import type { JobDefinition } from '../schedule/job.js';
import { bindAsync, type AsyncCall } from './async.js';
import { minifiedNameWarnings } from './minified.js';
import { collect, decoratedFile, isDecorated, nameJobs, namespaceOf, type AsyncTask, type DecoratedTask, type RegisterOptions, type Registration } from './naming.js';

export type { RegisterOptions } from './naming.js';

/**
 * A jobs module's default export as jobs: plain jobs as they are, and every decorated
 * instance (alone, in the array, or in an array in it) as its methods' jobs, namespaced by
 * the file its class is declared in (see {@link namespaceOf}).
 * @returns the definitions (plain ones unchecked: the caller checks every job), the tasks of the
 * `@Async` methods (to add, then bind with {@link bindTask}) and the decorated methods' errors.
 */
export function expandExport(exported: unknown, jobsModule: string): { jobs: unknown[]; tasks: DecoratedTask[]; errors: LeaseholdError[]; warnings: string[] } {
  const items = Array.isArray(exported) ? exported.flatMap((e: unknown) => (Array.isArray(e) ? (e as unknown[]) : [e])) : [exported];
  const plain: unknown[] = [];
  const registrations: Registration[] = [];
  const errors: LeaseholdError[] = [];
  for (const item of items) {
    if (!isDecorated(item)) {
      plain.push(item);
      continue;
    }
    const file = decoratedFile(item);
    const namespace = file === undefined ? undefined : namespaceOf(file, jobsModule);
    try {
      registrations.push(collect(item, namespace === undefined ? {} : { namespace }));
    } catch (err) {
      if (!(err instanceof LeaseholdError)) throw err;
      errors.push(err);
    }
  }
  const named = nameJobs(registrations);
  return { jobs: [...plain, ...named.jobs.map((j) => j.definition)], tasks: named.tasks, errors: [...errors, ...named.errors], warnings: minifiedNameWarnings(registrations) };
}

/** Makes an `@Async` method's calls submit its task through `call`. */
export function bindTask(task: DecoratedTask, call: (id: string) => AsyncCall): void {
  bindAsync(task.registration.instance, task.method, call(task.definition.id));
}

/** What {@link Registrations} adds jobs and tasks to (the runner). */
export interface RegistrationTarget<T> {
  add(job: JobDefinition): T;
  remove(id: string): boolean;
  /** Checks a task as adding it would, without adding it. */
  checkTask(task: AsyncTask): void;
  addTask(task: AsyncTask): void;
  removeTask(id: string): boolean;
  /** Submits one call of the task `id` and resolves with its result. */
  call(id: string): AsyncCall;
  /** Hears a warning about a registration (a class name that looks minified). */
  warn?(message: string): void;
}

/**
 * The instances registered with one runner, renaming their jobs and tasks as registrations
 * come: when a class joins another of the same name, the other's jobs and tasks are removed and
 * added again under their qualified names (its `@Async` methods then submit under the new name).
 */
export class Registrations<T> {
  private registrations: Registration[] = [];
  private ids = new Map<Registration, string[]>();
  private taskIds = new Map<Registration, string[]>();

  constructor(private readonly target: RegistrationTarget<T>) {}

  /**
   * Registers an instance's decorated methods as jobs and tasks.
   * @throws LeaseholdError naming `Class.method` and the field; nothing is added then.
   */
  register(instance: unknown, options: RegisterOptions = {}): T[] {
    const registration = collect(instance, options);
    const all = [...this.registrations, registration];
    const { jobs, tasks, errors } = nameJobs(all);
    for (const t of tasks) {
      if (t.registration !== registration) continue;
      try {
        this.target.checkTask(t.definition);
      } catch (err) {
        if (!(err instanceof LeaseholdError)) throw err;
        errors.push(new LeaseholdError(err.code, `@Async ${registration.className}.${t.method}: ${err.message}`, { cause: err }));
      }
    }
    const first = errors[0];
    if (first) throw new LeaseholdError(first.code, errors.map((e) => e.message).join('\n'), { cause: first });
    const added: T[] = [];
    for (const r of all) {
      const mine = jobs.filter((j) => j.registration === r).map((j) => j.definition);
      const before = this.ids.get(r);
      if (!before || before.join('\n') !== mine.map((d) => d.id).join('\n')) {
        for (const id of before ?? []) this.target.remove(id);
        const results = mine.map((d) => this.target.add(d));
        this.ids.set(r, mine.map((d) => d.id));
        if (r === registration) added.push(...results);
      }
      const myTasks = tasks.filter((t) => t.registration === r);
      const tasksBefore = this.taskIds.get(r);
      if (tasksBefore && tasksBefore.join('\n') === myTasks.map((t) => t.definition.id).join('\n')) continue;
      for (const id of tasksBefore ?? []) this.target.removeTask(id);
      for (const t of myTasks) {
        this.target.addTask(t.definition);
        bindTask(t, (id) => this.target.call(id));
      }
      this.taskIds.set(r, myTasks.map((t) => t.definition.id));
    }
    this.registrations = all;
    for (const warning of minifiedNameWarnings([registration])) this.target.warn?.(warning);
    return added;
  }
}
