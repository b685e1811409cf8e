/**
 * The checks of a node's configuration, shared by `createRunner` (options), `leasehold start`
 * and `leasehold status` (flags and environment variables): the key prefix, the instance id
 * and where Redis is. Each check takes the caller's name for the setting (`prefix`,
 * `LEASEHOLD_PREFIX/--prefix`) so its error names what the user wrote.
 * @module
 */
import { ErrorCodes, LeaseholdError } from './errors.js';

/** A key prefix: 1 to 64 letters, digits or `. _ : -` (no brace, so the keys' hash tags hold). */
const PREFIX_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

/** An instance id: 1 to 128 letters, digits or `. _ : @ -`. */
const INSTANCE_ID_PATTERN = /^[A-Za-z0-9._:@-]{1,128}$/;

/** A value in an error message: quoted, and cut at 80 characters. */
function shown(value: unknown): string {
  if (typeof value !== 'string') return value === null ? 'null' : typeof value;
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

function invalid(name: string, message: string): LeaseholdError {
  return new LeaseholdError(ErrorCodes.invalidConfig, `${name}: ${message}`);
}

/**
 * Checks a key prefix; `name` is the caller's name for it.
 * @throws LeaseholdError `invalidConfig` naming it.
 */
export function checkPrefix(value: unknown, name: string): string {
  if (typeof value !== 'string' || !PREFIX_PATTERN.test(value)) throw invalid(name, `${shown(value)} must be 1 to 64 letters, digits or . _ : -`);
  return value;
}

/**
 * Checks an instance id; `name` is the caller's name for it.
 * @throws LeaseholdError `invalidConfig` naming it.
 */
export function checkInstanceId(value: unknown, name: string): string {
  if (typeof value !== 'string' || !INSTANCE_ID_PATTERN.test(value)) throw invalid(name, `${shown(value)} must be 1 to 128 letters, digits or . _ : @ -`);
  return value;
}

/** The ways to reach Redis; at most one is given. */
export type RedisSource = 'url' | 'clusterNodes' | 'sentinels' | 'client';

/** The Redis settings as given: `undefined` for one not given. */
export interface RedisSourceSettings {
  readonly url: unknown;
  readonly clusterNodes: unknown;
  readonly sentinels: unknown;
  readonly sentinelName: unknown;
  /** An existing client (the runner's `redis` option); the CLI has none. */
  readonly client?: unknown;
}

/** The caller's name for each Redis setting, as its errors show them. */
export interface RedisSourceNames {
  readonly url: string;
  readonly clusterNodes: string;
  readonly sentinels: string;
  readonly sentinelName: string;
  readonly client?: string;
}

/**
 * Checks where Redis is: at most one of a URL, Cluster nodes, Sentinels or a client, and
 * Sentinels together with the master's name. A name without Sentinels is refused, or ignored
 * where it may be left over in an environment (`loneSentinelName: 'ignored'`).
 * @returns the source given, or `undefined` for none.
 * @throws LeaseholdError `invalidRedisTarget` naming the settings at fault.
 */
export function checkRedisSource(given: RedisSourceSettings, names: RedisSourceNames, loneSentinelName: 'refused' | 'ignored' = 'refused'): RedisSource | undefined {
  const sources = (['url', 'clusterNodes', 'sentinels', 'client'] as const).filter((s) => names[s] !== undefined);
  const set = sources.filter((s) => given[s] !== undefined);
  if (set.length > 1) {
    const all = sources.map((s) => names[s]);
    throw new LeaseholdError(
      ErrorCodes.invalidRedisTarget,
      `give only one of ${all.slice(0, -1).join(', ')} and ${all.at(-1) ?? ''}, not ${set.map((s) => names[s]).join(' and ')}`,
    );
  }
  if (given.sentinels !== undefined && given.sentinelName === undefined) {
    throw new LeaseholdError(ErrorCodes.invalidRedisTarget, `${names.sentinels} without ${names.sentinelName}: the two go together`);
  }
  if (given.sentinels === undefined && given.sentinelName !== undefined && loneSentinelName === 'refused') {
    throw new LeaseholdError(ErrorCodes.invalidRedisTarget, `${names.sentinelName} without ${names.sentinels}: the two go together`);
  }
  return set[0];
}
