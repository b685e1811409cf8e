/**
 * The optional peer dependencies: packages that only some parts of leasehold need, left out of
 * `npm install leasehold` to keep it small, and loaded on first use. A part that needs one
 * loads it here, so a project without it gets a `missingPeer` error naming the package, the
 * version range to install and what needs it, instead of Node's module-not-found.
 * @module
 */
import { createRequire } from 'node:module';
import { ErrorCodes, leaseholdError } from './errors.js';

/** Each optional peer with the version range leasehold is tested with (package.json's `peerDependencies`). */
export const OPTIONAL_PEERS = {
  bullmq: '^6.7.0',
  '@modelcontextprotocol/sdk': '^1.32.2',
  zod: '^4.0.0',
  'pino-pretty': '^13.0.0',
  tsx: '^4.20.0',
} as const;

/** The name of an optional peer. */
export type OptionalPeer = keyof typeof OPTIONAL_PEERS;

const require = createRequire(import.meta.url);

/** Whether `err` says that `name` itself (not a module it imports) could not be found. */
function notFound(err: unknown, name: string): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  return err.message.includes(`'${name}'`) || err.message.includes(`'${name}/`);
}

/** The `missingPeer` error: `purpose` needs the optional peer `name`. */
export function missingPeer(name: OptionalPeer, purpose: string, cause?: unknown): Error {
  return leaseholdError(ErrorCodes.missingPeer, { purpose, name, install: `${name}@${OPTIONAL_PEERS[name]}` }, { cause });
}

/**
 * Runs `load`, which imports the peer `name` (or modules that import it, or zod, which the MCP
 * SDK brings), for `purpose` ("queue executors").
 * @throws LeaseholdError `missingPeer` naming `name` when a peer it imports is not installed.
 */
export async function importPeer<T>(name: OptionalPeer, purpose: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const peer = (Object.keys(OPTIONAL_PEERS) as OptionalPeer[]).find((p) => notFound(err, p));
    if (peer !== undefined) throw missingPeer(peer === 'zod' ? name : peer, purpose, err);
    throw err;
  }
}

/**
 * Requires the CommonJS peer `name` synchronously, for `purpose`.
 * @throws LeaseholdError `missingPeer` when the package is not installed.
 */
export function requirePeer(name: OptionalPeer, purpose: string): unknown {
  try {
    return require(name);
  } catch (err) {
    if (notFound(err, name)) throw missingPeer(name, purpose, err);
    throw err;
  }
}

/** Whether the optional peer `name` can be resolved from leasehold. */
export function hasPeer(name: OptionalPeer): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

/** Whether this Node strips TypeScript's types itself (22.18+, 23.6+, 24; `process.features.typescript`). */
export function nodeStripsTypes(): boolean {
  const ts = (process.features as { typescript?: unknown }).typescript;
  return ts === 'strip' || ts === 'transform';
}

/**
 * How this process loads a `.ts` module: through tsx when it is installed (every TypeScript
 * feature, decorators included), else by Node itself where it strips types (erasable syntax
 * only: no enums, no parameter properties, no decorators).
 * @throws LeaseholdError `missingPeer` when neither can.
 */
export function typeScriptLoader(): 'tsx' | 'node' {
  if (hasPeer('tsx')) return 'tsx';
  if (nodeStripsTypes()) return 'node';
  throw missingPeer('tsx', `.ts modules on Node ${process.versions.node} (Node strips types itself from 22.18 and 23.6 on)`);
}
