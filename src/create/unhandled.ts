/**
 * What a process does with a rejection nobody handles and an exception nobody catches, for the
 * runners that ask (`createRunner({ unhandled })`; `leasehold start` asks for `'shutdown'`):
 *
 * - a rejection is logged once per occurrence, with the job or task whose code made it when its
 *   async context says so (`origin.ts`), counted, and the process keeps running;
 * - with `'shutdown'`, an exception is logged and counted the same way, then every runner that
 *   asked for `'shutdown'` stops as on SIGTERM (runs recorded, leases released, stats flushed)
 *   and the process exits with status 1.
 *
 * The process has one listener of each kind while any runner asks for it, whatever the number
 * of runners; an occurrence is reported by the runner it came from, else by the first that
 * asked. A runner's stop removes its part; with none left the listeners are removed, and Node's
 * defaults apply again.
 * @module
 */
import { systemClock } from '../clock.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import { currentOrigin, type Origin } from './origin.js';

/** What a runner does with what nobody handled: see the module comment. */
export const UnhandledModes = { log: 'log', shutdown: 'shutdown', off: 'off' } as const;
/** `log`, `shutdown` or `off`; see {@link UnhandledModes}. */
export type UnhandledMode = (typeof UnhandledModes)[keyof typeof UnhandledModes];

/** How an occurrence came: a rejection nobody handled, or an exception nobody caught. */
export type UnhandledKind = 'rejection' | 'exception';

/** How many of each kind a runner reported. */
export type UnhandledCounts = Record<UnhandledKind, number>;

/** How long an exception's stop may take before the process exits anyway, beyond the grace, ms. */
const STOP_BACKSTOP_MS = 15_000;

/** One runner's part. */
export interface Guard {
  readonly mode: Exclude<UnhandledMode, 'off'>;
  readonly logger: Logger;
  readonly counts: UnhandledCounts;
  /** The runner's grace: the exception's stop is given it plus {@link STOP_BACKSTOP_MS}. */
  readonly graceMs: number;
  /** Stops the runner (after an exception, `'shutdown'` only). */
  stop(): Promise<void>;
}

const guards: Guard[] = [];
let exiting = false;

function where(origin: Origin | undefined): string {
  if (origin?.jobId !== undefined) return ` in job "${origin.jobId}"`;
  if (origin?.task !== undefined) return ` in task "${origin.task}"`;
  return '';
}

function report(kind: UnhandledKind, err: unknown): void {
  const origin = currentOrigin();
  const guard = guards.find((g) => g === origin?.owner) ?? guards[0];
  if (!guard) return;
  guard.counts[kind]++;
  const { owner: _owner, ...named } = origin ?? { owner: undefined };
  const fields = { kind, err, ...named };
  const message = errorMessage(err);
  if (kind === 'rejection') guard.logger.error(fields, 'a promise rejected and nothing handled it%s: %s; the node keeps running', where(origin), message);
  else guard.logger.error(fields, 'an exception nothing caught%s: %s; stopping the node', where(origin), message);
}

function onRejection(reason: unknown): void {
  report('rejection', reason);
}

function onException(err: unknown): void {
  report('exception', err);
  if (exiting) return;
  exiting = true;
  process.exitCode = 1;
  const stopping = guards.filter((g) => g.mode === 'shutdown');
  const backstop = Math.max(0, ...stopping.map((g) => g.graceMs)) + STOP_BACKSTOP_MS;
  systemClock.setTimer(() => process.exit(1), backstop, true);
  void Promise.allSettled(stopping.map((g) => g.stop())).then((results) => {
    for (const [i, r] of results.entries()) if (r.status === 'rejected') stopping[i]?.logger.error({ err: r.reason }, 'stopping after the exception failed');
    process.exit(1);
  });
}

/** Adds or removes the process's listeners as the runners ask. */
function listen(): void {
  const rejections = guards.length > 0;
  const exceptions = guards.some((g) => g.mode === 'shutdown');
  if (rejections && !process.listeners('unhandledRejection').includes(onRejection)) process.on('unhandledRejection', onRejection);
  if (!rejections) process.off('unhandledRejection', onRejection);
  if (exceptions && !process.listeners('uncaughtException').includes(onException)) process.on('uncaughtException', onException);
  if (!exceptions) process.off('uncaughtException', onException);
}

/** Makes the process report to `guard` (see the module comment); returns its removal. */
export function guardProcess(guard: Guard): () => void {
  guards.push(guard);
  listen();
  return () => {
    const at = guards.indexOf(guard);
    if (at >= 0) guards.splice(at, 1);
    listen();
  };
}
