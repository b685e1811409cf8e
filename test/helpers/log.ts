/**
 * Captures pino's JSON lines in memory so tests can read what a node logged.
 */
import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { createLogger } from '../../src/log/logger.js';

/** A logger writing to memory, and the parsed lines. */
export function memoryLogger(level = 'debug'): { logger: Logger; lines: Array<Record<string, unknown>>; text: () => string } {
  const raw: string[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const s = chunk.toString();
      raw.push(s);
      for (const l of s.split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: createLogger({ level, destination }), lines, text: () => raw.join('') };
}
