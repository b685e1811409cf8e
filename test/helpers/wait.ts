/**
 * Waiting for a condition in tests that run in real time.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** Resolves once `f` holds, checking every 20 ms; throws naming `what` after `ms`. */
export async function until(what: string, f: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
