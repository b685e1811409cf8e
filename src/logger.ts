/**
 * The logger leasehold writes to: a small interface that a pino logger satisfies as it is, so
 * the core never depends on pino itself (only `log/logger.ts`, which makes the default one).
 * @module
 */

/** One level's log method: an object of fields and a message (with printf-style arguments), or a message alone. */
export interface LogFn {
  (fields: object, message?: string, ...args: unknown[]): void;
  (message: string, ...args: unknown[]): void;
}

/** A structured logger, such as pino's. */
export interface Logger {
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
  /** A logger that adds `bindings` to every line. */
  child(bindings: Record<string, unknown>): Logger;
  /** Whether lines of `level` (`debug`, `info`, ...) are written. */
  isLevelEnabled(level: string): boolean;
}
