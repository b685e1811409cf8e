/**
 * The logger leasehold writes to: a small interface that a pino logger satisfies as it is, so
 * the core never depends on pino itself (only `log/logger.ts`, which makes the default one).
 * @module
 */

/** One level's log method: an object of fields and a message (with printf-style arguments), or a message alone. */
export interface LogFn {
  /** Writes `fields` with an optional message (`%s`, `%d` placeholders filled from `args`). */
  (fields: object, message?: string, ...args: unknown[]): void;
  /** Writes a message (`%s`, `%d` placeholders filled from `args`). */
  (message: string, ...args: unknown[]): void;
}

/** A structured logger, such as pino's. */
export interface Logger {
  /** Writes a line at level error. */
  error: LogFn;
  /** Writes a line at level warn. */
  warn: LogFn;
  /** Writes a line at level info. */
  info: LogFn;
  /** Writes a line at level debug. */
  debug: LogFn;
  /** A logger that adds `bindings` to every line. */
  child(bindings: Record<string, unknown>): Logger;
  /** Whether lines of `level` (`debug`, `info`, ...) are written. */
  isLevelEnabled(level: string): boolean;
}
