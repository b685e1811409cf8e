/**
 * A pool of worker threads (piscina), made on first use: runs a task's or a job's handler in a
 * thread, forwards the thread's log lines to the node's logger, and on an abort first aborts
 * the handler's signal in the thread, then, after a short grace, terminates the thread, so even
 * a busy loop is interrupted. Closing waits for every thread to have exited: piscina's
 * `destroy()` waits only for the threads it still holds, not for one it terminated on an
 * abort, whose exit takes a while (tens to hundreds of ms for a thread that loaded modules
 * through tsx, more under load, and as long as a synchronous call it is in lasts); closing
 * before it would leave the thread and its ports behind `stop()`. A thread that reaches its
 * `resourceLimits` is ended by Node alone: its handler fails with `workerOutOfMemory`, and
 * piscina starts a new thread for the next one.
 * @module
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { BroadcastChannel, type Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { waitAtMost, type Timers, type TimerHandle } from '../clock.js';
import type { Logger } from '../logger.js';
import { ErrorCodes, LeaseholdError, errorMessage, isLeaseholdError, leaseholdError } from '../errors.js';
import type { AbortHook } from './execution.js';
import type { WorkerResourceLimits } from '../schedule/limits.js';
import { LOG_LEVELS, levelBits, type AbortMessage, type LogMessage, type ThreadAnswer, type ThreadData, type ThreadRequest } from './thread.js';

/** How long a thread whose handler was aborted gets to return before it is terminated. */
export const TERMINATE_GRACE_MS = 500;
/** How long closing waits for the threads to exit, in ms; a thread in a synchronous call exits only when it returns. */
export const EXIT_WAIT_MS = 5_000;

/** The worker's module beside this one (`.ts` when leasehold itself runs from source under tsx). */
const WORKER_FILE = new URL(`./worker-entry${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href;

/** Options of a {@link ThreadPool}. */
export interface ThreadPoolOptions {
  readonly name: string;
  readonly maxThreads: number;
  readonly idleTimeoutMs: number;
  readonly clock: Timers;
  /** Where the threads' log lines go (with the bindings of their task or run). */
  readonly logger: Logger;
  readonly terminateGraceMs?: number;
  /** The threads' limits (heap size, stack); undefined: Node's defaults. */
  readonly resourceLimits?: WorkerResourceLimits | undefined;
  /** The context's fields every request of the pool shares: given to each thread once, not with each request. */
  readonly ctx?: Readonly<Record<string, string>>;
}

/** A lazily made piscina pool. */
export class ThreadPool {
  private pool: Piscina | undefined;
  private down: BroadcastChannel | undefined;
  private up: BroadcastChannel | undefined;
  private readonly channel = `leasehold:${randomUUID()}`;
  private seq = 0;
  /** Set by close(): a pool is not opened again, since nothing would close it. */
  private closed = false;
  /** The threads seen in the pool that have not exited yet, with their exit. */
  private readonly alive = new Map<Worker, Promise<void>>();

  constructor(private readonly opts: ThreadPoolOptions) {}

  /** Threads alive now (none before the first task). */
  get threads(): number {
    return this.pool?.threads.length ?? 0;
  }

  private open(request: Pick<ThreadRequest, 'kind' | 'id'>): Piscina {
    if (this.pool) return this.pool;
    const { opts } = this;
    if (this.closed) throw new LeaseholdError(ErrorCodes.invalidState, `worker executor ${JSON.stringify(opts.name)} is closed: ${request.kind} ${JSON.stringify(request.id)} not run`);
    this.down = new BroadcastChannel(`${this.channel}:down`);
    this.up = new BroadcastChannel(`${this.channel}:up`);
    this.down.unref();
    this.up.unref();
    this.up.onmessage = (event: unknown) => this.log((event as { data: LogMessage }).data);
    const limits = opts.resourceLimits === undefined ? {} : { resourceLimits: opts.resourceLimits };
    const workerData: ThreadData = { channel: this.channel, ctx: opts.ctx ?? {} };
    this.pool = new Piscina({ filename: WORKER_FILE, name: 'default', minThreads: 0, maxThreads: opts.maxThreads, idleTimeout: opts.idleTimeoutMs, workerData, ...limits });
    // A thread that fails while it runs no task: piscina replaces it and reports it as the pool's
    // 'error' event, which without a listener would end the node.
    this.pool.on('error', (err: unknown) => opts.logger.warn({ err, executor: opts.name }, 'worker executor "%s": a thread failed outside any task: %s', opts.name, errorMessage(err)));
    return this.pool;
  }

  private log(m: LogMessage): void {
    if (m.type !== 'log' || !LOG_LEVELS.includes(m.level)) return;
    const target = this.opts.logger.child({ ...m.bindings });
    const [first, ...rest] = m.args;
    if (typeof first === 'string') target[m.level](first, ...rest);
    else target[m.level]((first ?? {}) as object, ...(rest as [string?, ...unknown[]]));
  }

  /**
   * Runs a handler in a thread. An abort heard through `hook` is passed to the handler's signal,
   * and the thread is terminated if it has not answered after the grace; the promise then
   * rejects with the abort's reason. A pool that was closed refuses it (`invalidState`).
   */
  async run(request: Omit<ThreadRequest, 'seq' | 'levels'>, hook: AbortHook): Promise<unknown> {
    const { opts } = this;
    const pool = this.open(request);
    const seq = ++this.seq;
    // piscina's documented `signal` may be any EventEmitter that emits 'abort': lighter per task than an AbortController.
    const terminate = new EventEmitter();
    let aborted: { readonly reason: unknown } | undefined;
    let terminated = false;
    let settled = false;
    let timer: TimerHandle | undefined;
    hook.onAbort((reason) => {
      if (settled || aborted) return;
      aborted = { reason };
      const code = isLeaseholdError(reason) ? reason.code : ErrorCodes.cancelled;
      const message: AbortMessage = { type: 'abort', seq, code, message: errorMessage(reason) };
      this.down?.postMessage(message);
      timer = opts.clock.setTimer(
        () => {
          terminated = true;
          // piscina lets go of the thread it terminates: its exit is awaited on close.
          this.watchExits(pool);
          terminate.emit('abort');
        },
        opts.terminateGraceMs ?? TERMINATE_GRACE_MS,
        true,
      );
    });
    try {
      const levels = levelBits((l) => opts.logger.isLevelEnabled(l));
      let answer: ThreadAnswer;
      try {
        answer = (await pool.run({ ...request, seq, levels }, { signal: terminate })) as ThreadAnswer;
      } catch (err) {
        if (terminated && aborted) throw aborted.reason;
        if (isOutOfMemory(err)) throw leaseholdError(ErrorCodes.workerOutOfMemory, { kind: request.kind, id: JSON.stringify(request.id), executor: JSON.stringify(opts.name), limits: describeLimits(opts.resourceLimits) }, { cause: err });
        throw leaseholdError(ErrorCodes.workerFailed, { kind: request.kind, id: JSON.stringify(request.id), executor: JSON.stringify(opts.name), problem: threadProblem(err) }, { cause: err });
      }
      if (answer.ok) return answer.value;
      if (answer.code !== undefined) throw new LeaseholdError(answer.code, String(answer.error));
      throw answer.error;
    } finally {
      settled = true;
      if (timer !== undefined) opts.clock.clearTimer(timer);
    }
  }

  /** Notes the exit of each thread of `pool`, to wait for it on close. */
  private watchExits(pool: Piscina): void {
    for (const thread of pool.threads) {
      if (this.alive.has(thread)) continue;
      const exited = new Promise<void>((resolve) =>
        thread.once('exit', () => {
          this.alive.delete(thread);
          resolve();
        }),
      );
      this.alive.set(thread, exited);
    }
  }

  /** Ends every thread (after the executor has ended its tasks), and waits for each to exit. */
  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    this.closed = true;
    if (pool) this.watchExits(pool);
    try {
      await pool?.destroy();
      await waitAtMost(this.opts.clock, Promise.all(this.alive.values()), EXIT_WAIT_MS, true);
      if (this.alive.size > 0) this.opts.logger.warn({ executor: this.opts.name, threads: this.alive.size }, 'worker executor "%s": %d terminated thread(s) not exited after %d ms (in a synchronous call?); the process ends once they have', this.opts.name, this.alive.size, EXIT_WAIT_MS);
    } finally {
      // Even if the pool failed to end a thread: an open channel would keep the process alive.
      this.down?.close();
      this.up?.close();
      this.down = this.up = undefined;
    }
    // A closed port, and a terminated thread's, lets go of its handle in the event loop's close
    // phase (Node 24 still lists it until then): resolve after it, with nothing of the pool left.
    await new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));
  }
}

/**
 * What made a thread fail, for the message. An answer that cannot be cloned fails in the
 * thread, after the handler returned; what reaches this side is then a `DataCloneError`, or an
 * error whose message was lost on the way (seen as an empty one), or not an error at all.
 */
function threadProblem(err: unknown): string {
  if (err instanceof Error && err.message !== '' && err.name !== 'DataCloneError') return err.message;
  const detail = err instanceof Error && err.message !== '' ? `: ${err.message}` : '';
  return `its answer could not be copied back (a result must be structured-cloneable)${detail}`;
}

/** Whether a thread ended because it reached its memory limits (Node's `ERR_WORKER_OUT_OF_MEMORY`). */
function isOutOfMemory(err: unknown): boolean {
  return err instanceof Error && (err as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY';
}

/** The limits a thread ran under, for the message. */
function describeLimits(limits: WorkerResourceLimits | undefined): string {
  const given = Object.entries(limits ?? {}).map(([k, v]) => `${k}: ${String(v)}`);
  return given.length === 0 ? "Node's default limits (no resourceLimits given)" : `resourceLimits { ${given.join(', ')} }`;
}
