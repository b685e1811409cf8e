/**
 * The file a decorator was called from: where the decorated class is declared. `@Scheduled`
 * and `@Async` record it, so that the classes of a jobs module are namespaced by their file
 * when two share a name, and a worker thread can tell such classes apart.
 * @module
 */
import { fileURLToPath } from 'node:url';

/** The file that called `decorator(...)`, when a stack frame tells it. */
export function callerFile(decorator: (...args: never[]) => unknown): string | undefined {
  const holder: { stack?: string } = {};
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 2;
  try {
    Error.captureStackTrace(holder, decorator);
  } finally {
    Error.stackTraceLimit = limit;
  }
  const frame = holder.stack?.split('\n').find((l) => /^\s+at /.test(l));
  const m = frame ? /((?:file:\/\/)?\/[^\s()?]+?)(?:\?[^\s():]*)?:\d+:\d+\)?$/.exec(frame) : null;
  if (!m?.[1]) return undefined;
  return m[1].startsWith('file://') ? fileURLToPath(m[1]) : m[1];
}
