/**
 * The worker thread's side of decorated methods: a `@Scheduled({ thread: 'worker' })` method or
 * an `@Async` method on a worker executor runs in a thread that loads its module, which cannot
 * reach the instance registered on the node. The thread runs the method on the instance the
 * module itself makes: a decorated instance it exports (a named export, its default export, or in
 * an exported array, as a jobs module's default export holds them), found by the job's or task's
 * name under the naming rule of `naming.ts`.
 * @module
 */
import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { bindAsync } from './async.js';
import { collect, decoratedFile, isDecorated, namespaceOf } from './naming.js';

/** What a thread runs: a job's handler takes the run's context, a task's the call's arguments. */
export interface DecoratedHandler {
  readonly run: (...args: unknown[]) => unknown;
}

/** A decorated method that may be the one named, and how it is named. */
interface Candidate {
  readonly handler: DecoratedHandler;
  /** `Class.method`, and the class's file when known: how an error names it. */
  readonly label: string;
  /** Named so exactly (an explicit id, `Class.method`, or qualified by the jobs module's rule). */
  readonly exact: boolean;
}

/**
 * The decorated method named `id` among the instances a module exports, with `this` bound to its
 * instance. `module` is the module's URL or path, by which a jobs module's classes of one name are
 * told apart (each is qualified by its file, as `leasehold start` names them); a name qualified by
 * another namespace (`runner.register(instance, { namespace })`) is found by its `Class.method`.
 * @returns the method; an error when several could be it; undefined when none is.
 */
export function findDecorated(mod: Record<string, unknown>, module: string, kind: 'job' | 'task', id: string): DecoratedHandler | LeaseholdError | undefined {
  const jobsModule = pathOf(module);
  const candidates: Candidate[] = [];
  for (const instance of exportedInstances(mod)) {
    const registration = collect(instance);
    const file = decoratedFile(instance);
    const namespace = file !== undefined && jobsModule !== undefined ? namespaceOf(file, jobsModule) : undefined;
    for (const m of registration.methods) {
      const scheduled = m.declarations.length === 1 && m.async === undefined;
      const async = m.async !== undefined && m.declarations.length === 0 ? m.async : undefined;
      if (kind === 'job' ? !scheduled : async === undefined) continue;
      const name = `${registration.className}.${m.method}`;
      const explicit = kind === 'job' ? m.declarations[0]?.options.id : async?.options.id;
      const exact = explicit !== undefined ? explicit === id : id === name || (namespace !== undefined && id === `${namespace}.${name}`);
      if (!exact && (explicit !== undefined || !id.endsWith(`.${name}`))) continue;
      const fn = m.fn;
      const original = async?.original;
      const handler: DecoratedHandler = original
        ? { run: (args: unknown) => original.apply(instance, Array.isArray(args) ? (args as unknown[]) : [args]) }
        : { run: (ctx: unknown) => fn.call(instance, ctx as never) };
      candidates.push({ handler, label: file === undefined ? name : `${name} (${file})`, exact });
    }
  }
  const exact = candidates.filter((c) => c.exact);
  const chosen = exact.length > 0 ? exact : candidates;
  if (chosen.length > 1) {
    return new LeaseholdError(
      ErrorCodes.unknownTask,
      `${kind} ${JSON.stringify(id)}: its module ${module} exports ${chosen.length} instances whose decorated method it could be (${chosen.map((c) => c.label).join(', ')}): give the method an explicit id, or export one instance of the class`,
    );
  }
  const found = chosen[0];
  if (!found) return undefined;
  return found.handler;
}

/**
 * Makes the `@Async` methods of the instances a thread found reject, saying why: there is no
 * runner in a worker thread to submit their calls to.
 */
export function refuseAsyncInThread(mod: Record<string, unknown>): void {
  for (const instance of exportedInstances(mod)) {
    const registration = collect(instance);
    for (const m of registration.methods) {
      if (m.async === undefined) continue;
      const name = `${registration.className}.${m.method}`;
      bindAsync(instance, m.method, () =>
        Promise.reject(new LeaseholdError(ErrorCodes.invalidState, `@Async method ${name} called in a worker thread: there is no runner here to submit it to; call it from a job or task on the event loop, or call the work directly`)),
      );
    }
  }
}

/** The decorated instances among a module's exports, each once. */
function exportedInstances(mod: Record<string, unknown>): object[] {
  const found = new Set<object>();
  const visit = (value: unknown, depth: number): void => {
    if (isDecorated(value)) found.add(value);
    else if (depth > 0 && Array.isArray(value)) for (const item of value) visit(item, depth - 1);
  };
  const values = Object.values(mod);
  // A CommonJS module compiled by tsx: its exports once more under `default`.
  const inner = mod['default'];
  if (typeof inner === 'object' && inner !== null && !Array.isArray(inner) && !isDecorated(inner)) values.push(...Object.values(inner));
  for (const value of values) visit(value, 2);
  return [...found];
}

/** A module's path, from its URL or path; undefined for a URL that is no file. */
function pathOf(module: string): string | undefined {
  if (isAbsolute(module)) return module;
  try {
    return fileURLToPath(module);
  } catch {
    return undefined;
  }
}
