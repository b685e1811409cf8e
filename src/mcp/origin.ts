/**
 * The `Origin` rule of `POST /mcp`, against DNS rebinding: a web page on another site that gets
 * its name resolved to a node's address must not reach the tools from a browser. A request
 * without `Origin` (an agent, curl) is not a browser's and passes; one with an `Origin` passes
 * only from a loopback origin (`localhost`, `127.0.0.1`, `[::1]`, any port) or one listed.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Checks the allowed origins as configured (`https://tools.example.com`), each normalized as
 * a browser sends it (lower case, no default port, no path).
 * @throws LeaseholdError `invalidConfig` naming `name` and the entry that is no origin.
 */
export function checkAllowedOrigins(list: readonly string[] | undefined, name: string): readonly string[] {
  return (list ?? []).map((entry) => {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin === 'null' || (url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '' || url.username !== '') {
      throw new LeaseholdError(ErrorCodes.invalidConfig, `${name}: ${JSON.stringify(entry.slice(0, 80))} is not an origin (scheme://host[:port], such as https://tools.example.com)`);
    }
    return url.origin;
  });
}

/** Whether a request with this `Origin` header may call the tools. */
export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if ((url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK.has(url.hostname)) return true;
  return allowed.includes(url.origin);
}
