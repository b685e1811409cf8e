/**
 * pino loggers with secrets redacted.
 * @module
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { hasPeer, requirePeer } from '../peer.js';

/** Log formats accepted by `LOG_FORMAT`: JSON lines, or readable lines for people. */
export const LOG_FORMATS = ['json', 'pretty'] as const;
/** One of {@link LOG_FORMATS}. */
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * The format of a node's log: `LOG_FORMAT` when set, else readable lines when stdout is a
 * terminal (a person reads it) and pino-pretty, an optional peer, is installed, and JSON lines
 * otherwise (a log shipper reads them).
 * @throws LeaseholdError `invalidConfig` for an unknown format.
 */
export function logFormat(value: string | undefined, isTty: boolean): LogFormat {
  if (value === undefined || value.trim() === '') return isTty && hasPeer('pino-pretty') ? 'pretty' : 'json';
  const f = value.trim().toLowerCase();
  if (!(LOG_FORMATS as readonly string[]).includes(f)) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `LOG_FORMAT: ${JSON.stringify(value)} is not one of ${LOG_FORMATS.join(', ')}`);
  }
  return f as LogFormat;
}

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
 * @throws LeaseholdError `invalidConfig` for an unknown level; `missingPeer` for the `pretty`
 * format without pino-pretty.
 */
export function createLogger(opts: { level?: string; format?: LogFormat; destination?: DestinationStream; base?: Record<string, unknown> } = {}): Logger {
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
  if (opts.format === 'pretty') {
    // Redaction happens before the line reaches the stream, so secrets stay hidden here too.
    const pretty = requirePeer('pino-pretty', 'readable logs (LOG_FORMAT=pretty)') as typeof import('pino-pretty').build;
    return pino(options, pretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', ...(opts.destination ? { destination: opts.destination } : {}) }));
  }
  // Written as each line is logged, not when stdout drains: a process ended by a signal (NestJS
  // raises SIGTERM again after its shutdown hooks) runs no exit handler that could flush it.
  return pino(options, opts.destination ?? pino.destination({ dest: 1, sync: true }));
}
