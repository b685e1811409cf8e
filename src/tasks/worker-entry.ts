/**
 * The worker thread's side: loads the module of a task or job (a `.ts` one through tsx's
 * scoped `tsImport`, as the CLI loads a `.ts` jobs module, since a thread does not inherit the
 * hooks of the process), finds the task or job by id among its exports (or a decorated method
 * of that name on an instance it exports), and runs its handler with a context whose signal the
 * node aborts and whose log lines reach the node's logger.
 * @module
 */
import { extname, isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import { workerData } from 'piscina';
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import { typeScriptLoader } from '../peer.js';
import { findDecorated, refuseAsyncInThread } from '../decorators/lookup.js';
import type { Logger } from '../logger.js';
import { hasLevel, markWorkerThread, type AbortMessage, type LogLevel, type ThreadAnswer, type ThreadData, type ThreadRequest } from './thread.js';

// Before any task's or job's module is loaded: `isWorkerThread()` answers true in them.
markWorkerThread();

const TS_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.tsx']);
const modules = new Map<string, Promise<Record<string, unknown>>>();

/** Imports a module once per thread. */
function load(module: string): Promise<Record<string, unknown>> {
  const url = isAbsolute(module) ? pathToFileURL(module).href : module;
  let loaded = modules.get(url);
  if (!loaded) {
    const typeScript = TS_EXTENSIONS.has(extname(new URL(url).pathname));
    loaded = (typeScript && typeScriptLoader() === 'tsx' ? import('tsx/esm/api').then((tsx) => tsx.tsImport(url, import.meta.url)) : import(url)).then((mod: Record<string, unknown>) => {
      // No runner here: an @Async method called in this thread says so.
      refuseAsyncInThread(mod);
      return mod;
    });
    modules.set(url, loaded);
  }
  return loaded;
}

const SCHEDULE_KEYS = ['cron', 'fixedRate', 'fixedDelay'];

function matches(value: unknown, kind: 'task' | 'job', id: string): value is { run: (...args: unknown[]) => unknown } {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  if (v['id'] !== id || typeof v['run'] !== 'function') return false;
  const scheduled = SCHEDULE_KEYS.some((k) => v[k] !== undefined);
  return kind === 'job' ? scheduled : !scheduled;
}

/** The task or job `id` among a module's exports (an export of its own, or in an exported array). */
function find(mod: Record<string, unknown>, kind: 'task' | 'job', id: string): { run: (...args: unknown[]) => unknown } | undefined {
  const seen = new Set<unknown>();
  const look = (value: unknown, depth: number): { run: (...args: unknown[]) => unknown } | undefined => {
    if (seen.has(value)) return undefined;
    seen.add(value);
    if (matches(value, kind, id)) return value;
    if (depth > 0 && Array.isArray(value)) for (const item of value) if (matches(item, kind, id)) return item;
    // A CommonJS module compiled by tsx: its exports once more under `default`.
    if (depth > 0 && typeof value === 'object' && value !== null && !Array.isArray(value)) for (const inner of Object.values(value)) {
      const found = look(inner, depth - 1);
      if (found) return found;
    }
    return undefined;
  };
  return look(mod, 2);
}

/** What the pool gave this thread once (see ThreadData). */
const shared = workerData as ThreadData;
/** The pool's channels, opened with the thread's first request: aborts come down one, log lines go up the other. */
let channels: { up: BroadcastChannel; down: BroadcastChannel } | undefined;
/** The handlers running in this thread, by request number: their abort, made when the handler reads its signal or an abort comes. */
const running = new Map<number, Running>();

/** A handler's abort in this thread. */
class Running {
  private controller: AbortController | undefined;

  get signal(): AbortSignal {
    return (this.controller ??= new AbortController()).signal;
  }

  abort(reason: LeaseholdError): void {
    (this.controller ??= new AbortController()).abort(reason);
  }
}

type Found = { run: (...args: unknown[]) => unknown } | LeaseholdError | undefined;
/** What a module exports, by module, then kind and id: found once per thread. */
const found = new Map<string, Map<string, Found>>();

/** The handler of a request, looked up in its module's exports once per thread. */
function handlerOf(mod: Record<string, unknown>, req: ThreadRequest): Found {
  let inModule = found.get(req.module);
  if (!inModule) found.set(req.module, (inModule = new Map()));
  const key = `${req.kind}\u0000${req.id}`;
  if (!inModule.has(key)) inModule.set(key, find(mod, req.kind, req.id) ?? findDecorated(mod, req.module, req.kind, req.id));
  return inModule.get(key);
}

function openChannels(): { up: BroadcastChannel; down: BroadcastChannel } {
  if (!channels) {
    const down = new BroadcastChannel(`${shared.channel}:down`);
    const up = new BroadcastChannel(`${shared.channel}:up`);
    down.unref();
    up.unref();
    down.onmessage = (event: unknown) => {
      const m = (event as { data: AbortMessage }).data;
      if (m.type === 'abort') running.get(m.seq)?.abort(new LeaseholdError(m.code, m.message));
    };
    channels = { up, down };
  }
  return channels;
}

/** A logger that sends its lines to the node, with the task's or run's bindings. */
function portLogger(req: ThreadRequest, bindings: Record<string, unknown>): Logger {
  const { up } = openChannels();
  const send = (level: LogLevel) => (...args: unknown[]): void => {
    try {
      up.postMessage({ type: 'log', level, bindings, args });
    } catch {
      // An argument that cannot be cloned (a function, a socket): its text instead.
      up.postMessage({ type: 'log', level, bindings, args: args.map((a) => (typeof a === 'object' && a !== null ? String(a) : typeof a === 'function' ? '[function]' : a)) });
    }
  };
  return {
    error: send('error'),
    warn: send('warn'),
    info: send('info'),
    debug: send('debug'),
    child: (more) => portLogger(req, { ...bindings, ...more }),
    isLevelEnabled: (level) => hasLevel(req.levels, level),
  };
}

/**
 * The context a handler gets in the thread: the request's plain fields, and `signal` and `log`
 * made when first read (as on the event loop). A class, not an object literal with its own
 * getters, which cost more per task than a no-op task does (docs/benchmarks.md, S6).
 */
class ThreadContext {
  readonly #req: ThreadRequest;
  readonly #abort: Running;
  #log: Logger | undefined;
  /** Refused in a thread: a task or job submits from the event loop. */
  readonly submit: () => Promise<never>;

  constructor(req: ThreadRequest, abort: Running) {
    Object.assign(this, shared.ctx, req.ctx);
    this.#req = req;
    this.#abort = abort;
    this.submit = () => Promise.reject(new LeaseholdError(ErrorCodes.invalidTask, `${req.kind} "${req.id}": ctx.submit is not available on a worker thread; submit from a job or task on the event loop`));
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get log(): Logger {
    if (!this.#log) {
      const req = this.#req;
      const c = { ...shared.ctx, ...req.ctx };
      const attempt = typeof c['attempt'] === 'number' && c['attempt'] > 1 ? { attempt: c['attempt'] } : {};
      // The bindings the node's own logger would give: the task's, or the run's.
      this.#log = portLogger(req, req.kind === 'task' ? { task: c['task'], taskId: c['taskId'], executor: c['executor'], ...attempt } : { jobId: c['jobId'], runId: c['runId'], ...attempt });
    }
    return this.#log;
  }
}

/** Runs one task or job handler; piscina calls this for each request. */
export default async function runInThread(req: ThreadRequest): Promise<ThreadAnswer> {
  const abort = new Running();
  openChannels();
  running.set(req.seq, abort);
  try {
    let mod: Record<string, unknown>;
    try {
      mod = await load(req.module);
    } catch (err) {
      return { ok: false, code: ErrorCodes.invalidModule, error: `${req.kind} "${req.id}": its module ${req.module} failed to load in a worker thread: ${errorMessage(err)}` };
    }
    const handler = handlerOf(mod, req);
    if (handler instanceof LeaseholdError) return { ok: false, code: handler.code, error: handler.message };
    if (!handler) {
      return {
        ok: false,
        code: ErrorCodes.unknownTask,
        error: `${req.kind} "${req.id}": its module ${req.module} does not export it (a worker thread finds a ${req.kind} among the module's exports or in an exported array, and a decorated method on an instance the module exports)`,
      };
    }
    const ctx = new ThreadContext(req, abort);
    const value: unknown = req.kind === 'task' ? await handler.run(req.payload, ctx) : await handler.run(ctx);
    return { ok: true, value };
  } catch (error) {
    return { ok: false, error };
  } finally {
    running.delete(req.seq);
  }
}

