/**
 * pino loggers with secrets redacted.
 * @module
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import { ErrorCodes, LeaseholdError } from '../errors.js';

/** Log levels accepted by `LOG_LEVEL`. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Paths pino replaces with `[redacted]` wherever they appear in a log object. */
const REDACT_PATHS = [
  'password',
  '*.password',
  'token',
  '*.token',
  'adminToken',
  '*.adminToken',
  'authorization',
  '*.authorization',
  'req.headers.authorization',
  'headers.authorization',
  'redisUrl',
  '*.redisUrl',
];

/**
 * Creates the node's logger (JSON lines on stdout, or on `destination`).
 * @throws LeaseholdError `invalidConfig` for an unknown level.
 */
export function createLogger(opts: { level?: string; destination?: DestinationStream; base?: Record<string, unknown> } = {}): Logger {
  const level = (opts.level ?? 'info').toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `LOG_LEVEL: ${JSON.stringify(opts.level)} is not one of ${LOG_LEVELS.join(', ')}`);
  }
  const options = {
    level,
    base: opts.base ?? { pid: process.pid },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}
