/**
 * A pool of worker threads (piscina), made on first use: runs a task's or a job's handler in a
 * thread, forwards the thread's log lines to the node's logger, and on an abort first aborts
 * the handler's signal in the thread, then, after a short grace, terminates the thread, so even
 * a busy loop is interrupted.
 * @module
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { Timers, TimerHandle } from '../clock.js';
import type { Logger } from '../logger.js';
import { ErrorCodes, LeaseholdError, errorMessage, isLeaseholdError } from '../errors.js';
import type { AbortHook } from './execution.js';
import { LOG_LEVELS, type AbortMessage, type LogMessage, type ThreadAnswer, type ThreadRequest } from './thread.js';

/** How long a thread whose handler was aborted gets to return before it is terminated. */
export const TERMINATE_GRACE_MS = 500;

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
}

/** A lazily made piscina pool. */
export class ThreadPool {
  private pool: Piscina | undefined;
  private down: BroadcastChannel | undefined;
  private up: BroadcastChannel | undefined;
  private readonly channel = `leasehold:${randomUUID()}`;
  private seq = 0;

  constructor(private readonly opts: ThreadPoolOptions) {}

  /** Threads alive now (none before the first task). */
  get threads(): number {
    return this.pool?.threads.length ?? 0;
  }

  private open(): Piscina {
    if (this.pool) return this.pool;
    const { opts } = this;
    this.down = new BroadcastChannel(`${this.channel}:down`);
    this.up = new BroadcastChannel(`${this.channel}:up`);
    this.down.unref();
    this.up.unref();
    this.up.onmessage = (event: unknown) => this.log((event as { data: LogMessage }).data);
    this.pool = new Piscina({ filename: WORKER_FILE, name: 'default', minThreads: 0, maxThreads: opts.maxThreads, idleTimeout: opts.idleTimeoutMs });
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
   * rejects with the abort's reason.
   */
  async run(request: Omit<ThreadRequest, 'seq' | 'channel' | 'levels'>, hook: AbortHook): Promise<unknown> {
    const { opts } = this;
    const pool = this.open();
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
          terminate.emit('abort');
        },
        opts.terminateGraceMs ?? TERMINATE_GRACE_MS,
        true,
      );
    });
    try {
      const levels = LOG_LEVELS.filter((l) => opts.logger.isLevelEnabled(l));
      let answer: ThreadAnswer;
      try {
        answer = (await pool.run({ ...request, seq, channel: this.channel, levels }, { signal: terminate })) as ThreadAnswer;
      } catch (err) {
        if (terminated && aborted) throw aborted.reason;
        throw new LeaseholdError(ErrorCodes.invalidTask, `${request.kind} "${request.id}" on worker executor "${opts.name}": ${errorMessage(err)}`, { cause: err });
      }
      if (answer.ok) return answer.value;
      if (answer.code !== undefined) throw new LeaseholdError(answer.code, String(answer.error));
      throw answer.error;
    } finally {
      settled = true;
      if (timer !== undefined) opts.clock.clearTimer(timer);
    }
  }

  /** Ends every thread (after the executor has ended its tasks). */
  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    try {
      await pool?.destroy();
    } finally {
      // Even if the pool failed to end a thread: an open channel would keep the process alive.
      this.down?.close();
      this.up?.close();
      this.down = this.up = undefined;
    }
  }
}
