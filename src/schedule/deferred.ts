/**
 * Definition checks left to a command: `leasehold check` and `leasehold start` load a jobs
 * module with the checks of `defineJob` and `defineTask` deferred, then check every definition
 * of the module and name each wrong one, where the first wrong `defineJob` would otherwise stop
 * the module loading.
 * @module
 */

/** A registered symbol, so that the copy of leasehold a module imports (a bundled one too) sees it. */
const DEFERRED = Symbol.for('leasehold.deferDefinitionChecks');

/** Whether `defineJob` and `defineTask` leave their checks to a command that checks every definition. */
export function checksDeferred(): boolean {
  return (globalThis as Record<symbol, unknown>)[DEFERRED] === true;
}

/**
 * Loads definitions with the checks of `defineJob` and `defineTask` deferred, for a caller that
 * then checks every definition loaded and reports them all: a module's second wrong job is
 * named too, not only the first, which would stop the module loading.
 */
export async function deferringChecks<T>(load: () => Promise<T>): Promise<T> {
  const global = globalThis as Record<symbol, unknown>;
  global[DEFERRED] = true;
  try {
    return await load();
  } finally {
    delete global[DEFERRED];
  }
}
