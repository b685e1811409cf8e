/**
 * Loads a jobs module (`.js`, `.mjs`, `.ts`): its default export must be an array of jobs.
 * @module
 */
import { existsSync } from 'node:fs';
import { resolve, extname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCodes, LeaseholdError } from '../errors.js';

const TS_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.tsx']);

/**
 * Imports the module at `path` (relative to the working directory) and returns its default export.
 * @throws LeaseholdError `invalidModule` when it is missing, fails to load, or exports no array.
 */
export async function loadJobsModule(path: string): Promise<unknown[]> {
  const file = resolve(path);
  if (!existsSync(file)) throw new LeaseholdError(ErrorCodes.invalidModule, `jobs module ${path}: no such file`);
  let mod: { default?: unknown };
  try {
    if (TS_EXTENSIONS.has(extname(file))) {
      const { tsImport } = await import('tsx/esm/api');
      mod = (await tsImport(pathToFileURL(file).href, import.meta.url)) as { default?: unknown };
    } else {
      mod = (await import(pathToFileURL(file).href)) as { default?: unknown };
    }
  } catch (err) {
    const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new LeaseholdError(ErrorCodes.invalidModule, `jobs module ${path} failed to load: ${msg}`, { cause: err });
  }
  // tsx may wrap a CommonJS-style default once more.
  let exported = mod.default;
  if (!Array.isArray(exported) && exported && typeof exported === 'object' && 'default' in exported) {
    exported = (exported as { default: unknown }).default;
  }
  if (!Array.isArray(exported)) {
    throw new LeaseholdError(ErrorCodes.invalidModule, `jobs module ${path}: its default export must be an array of jobs, got ${exported === undefined ? 'nothing' : typeof exported}`);
  }
  return exported;
}
