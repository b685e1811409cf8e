/**
 * Schedule values a definition reads from the environment (`fromEnv`), and a declared schedule
 * with those read. This layer reads no environment of its own: the runner hands one in (its
 * settings source's) at every fire.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { describe, type Duration } from './duration.js';

/**
 * A schedule value read from an environment variable at every fire, with a default.
 * Create one with {@link fromEnv}.
 * @typeParam T - The default's type: a {@link Duration} for `fixedRate` and `fixedDelay`, a
 * string for `cron` and `zone`.
 */
export interface EnvSetting<T extends string | number = string | number> {
  /** The environment variable to read. */
  readonly env: string;
  /** The value used when the variable is unset or empty. */
  readonly default: T;
}

/** Environment variables by name, as `process.env` holds them. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** A job's schedule as declared, before settings overrides. */
export type ScheduleDeclaration =
  | { readonly kind: 'cron'; readonly value: string | EnvSetting; readonly zone: string | EnvSetting | undefined }
  | { readonly kind: 'fixedRate' | 'fixedDelay'; readonly value: Duration | EnvSetting };

/** A declared schedule with its environment settings read: literal values only (a variable's, unchecked). */
export type DeclaredSchedule =
  | { readonly kind: 'cron'; readonly value: string; readonly zone: string | undefined }
  | { readonly kind: 'fixedRate' | 'fixedDelay'; readonly value: Duration | string };

/** An environment variable's name. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Reads a schedule value from an environment variable at every fire.
 * @typeParam T - The default's type, as written: `fixedRate: fromEnv('RATE', '5 min')` does not
 * compile, as `fixedRate: '5 min'` does not.
 * @example `cron: fromEnv('DIGEST_CRON', '0 0 8 * * *')`
 */
export function fromEnv<const T extends string | number>(env: string, defaultValue: T): EnvSetting<T> {
  if (typeof env !== 'string' || !ENV_NAME.test(env)) {
    throw new LeaseholdError(ErrorCodes.invalidJob, `fromEnv: ${describe(env)} is not an environment variable name`);
  }
  return Object.freeze({ env, default: defaultValue });
}

/** Is this value an {@link EnvSetting}? */
export function isEnvSetting(value: unknown): value is EnvSetting {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && 'env' in value && 'default' in value;
}

/** A setting's current value in `env` (the variable, or its default when unset or empty). */
export function readSetting<T>(value: T | EnvSetting, env: Environment): T | string | number {
  if (!isEnvSetting(value)) return value;
  const raw = env[value.env];
  return raw === undefined || raw.trim() === '' ? value.default : raw;
}

/** Whether a declared schedule reads the environment. */
export function readsEnvironment(d: ScheduleDeclaration): boolean {
  return isEnvSetting(d.value) || (d.kind === 'cron' && isEnvSetting(d.zone));
}

/** A declared schedule with its settings read in `env`: the same object when it has none. */
export function readDeclaration(d: ScheduleDeclaration, env: Environment): DeclaredSchedule {
  if (!readsEnvironment(d)) return d as DeclaredSchedule;
  if (d.kind === 'cron') {
    return { kind: 'cron', value: String(readSetting(d.value, env)), zone: d.zone === undefined ? undefined : String(readSetting(d.zone, env)) };
  }
  return { kind: d.kind, value: readSetting(d.value, env) };
}
