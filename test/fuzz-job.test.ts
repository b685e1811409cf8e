/**
 * Job definitions and durations as untrusted input (SPEC 1 and 9), fuzzed with fast-check:
 * - any value given to `normalizeJob`, `defineJob` or `runner.add` throws nothing but a
 *   LeaseholdError, and its message names the job and the field (or says that a job must be
 *   an object); getters and proxies that throw are bad fields, not crashes;
 * - a definition that is accepted has a schedule that works: whole milliseconds, and a
 *   trigger whose next tick is a finite time after the last;
 * - a cron read from the environment has its default checked like a literal cron;
 * - `readDuration` throws only `invalidDuration` naming what was parsed, and what it
 *   accepts is a whole number of ms between 0 (or 1) and 2^31-1.
 * Seeded, so a failure is reproducible; set FUZZ_SEED to explore other cases.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { pino } from 'pino';
import { LeaseholdError, isLeaseholdError } from '../src/errors.js';
import { createRunner } from '../src/create/index.js';
import { formatDuration, readDuration } from '../src/schedule/duration.js';
import { defineJob, normalizeJob, type JobDefinition } from '../src/schedule/job.js';
import { fromEnv, readDeclaration } from '../src/schedule/setting.js';
import { resolveSchedule } from '../src/schedule/trigger.js';

const SEED = Number(process.env['FUZZ_SEED'] ?? 0x1ea5e);
const params = (numRuns: number): fc.Parameters<unknown> => ({ seed: SEED, numRuns });

const KNOWN = ['id', 'scope', 'cron', 'zone', 'fixedRate', 'fixedDelay', 'initialDelay', 'timeout', 'lease', 'misfireGrace', 'description', 'run'];
const MAX_MS = 2_147_483_647;
const run = (): void => undefined;

/** Values of every kind, including the odd ones (boxed, sparse, null prototype, typed arrays). */
const anything = fc.anything({
  withBigInt: true, withBoxedValues: true, withDate: true, withMap: true, withSet: true, withNullPrototype: true,
  withObjectString: true, withSparseArray: true, withTypedArray: true, maxDepth: 2,
});
const durationLike = fc.oneof(
  fc.double({ min: -10, max: 3e9, noNaN: false }),
  fc.constantFrom(0, -0, 0.4, 0.5, 199, 200, MAX_MS, MAX_MS + 1, Number.NaN, Infinity, -Infinity, 1e300, Number.MIN_VALUE),
  fc.tuple(fc.stringMatching(/^-?\d{0,4}(\.\d{0,3})?$/), fc.constantFrom('', ' ', '\t'), fc.constantFrom('', 'ms', 's', 'm', 'h', 'd', 'S', 'y', 'µs')).map((p) => p.join('')),
  fc.string({ maxLength: 12 }),
);
const cronLike = fc.oneof(
  fc.constantFrom('0 0 8 * * *', '*/5 * * * * *', '@daily', '@hourly', '0 0 12 13 * FRI', '0 0 25 * * *', '* * * *', '', ' ', '@often', '0 0 0 31 2 *'),
  fc.array(fc.constantFrom('*', '0', '5', '59', '60', '*/0', '1-2', '2-1', 'L', 'W', '?', 'MON', 'JAN', '#', ','), { minLength: 1, maxLength: 7 }).map((a) => a.join(' ')),
  fc.string({ maxLength: 30 }),
);
const zoneLike = fc.oneof(
  fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', '+02:00', '-14:00', '+14:01', '+99:99', 'Z', 'Mars/Olympus', 'utc', 'Etc/GMT+5', ''),
  fc.constantFrom(...Intl.supportedValuesOf('timeZone')),
  fc.string({ maxLength: 20 }),
);
const envName = fc.oneof(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/), fc.string({ maxLength: 6 }));
const setting = fc.record({ env: fc.oneof(envName, anything), default: fc.oneof(cronLike, durationLike, anything) });
const idLike = fc.oneof(fc.stringMatching(/^[A-Za-z0-9._:-]{1,12}$/), fc.string({ maxLength: 10 }), fc.constant('x'.repeat(129)), anything);
const fieldValue = (key: string): fc.Arbitrary<unknown> => {
  switch (key) {
    case 'id': return idLike;
    case 'scope': return fc.oneof(fc.constantFrom('instance', 'installation', 'global', ''), anything);
    case 'cron': return fc.oneof({ weight: 4, arbitrary: cronLike }, { weight: 1, arbitrary: setting }, { weight: 1, arbitrary: anything });
    case 'zone': return fc.oneof({ weight: 4, arbitrary: zoneLike }, { weight: 1, arbitrary: setting }, { weight: 1, arbitrary: anything });
    case 'run': return fc.oneof({ weight: 4, arbitrary: fc.constant(run) }, { weight: 1, arbitrary: anything });
    case 'description': return fc.oneof(fc.string(), anything);
    case 'fixedRate': case 'fixedDelay': return fc.oneof({ weight: 4, arbitrary: durationLike }, { weight: 1, arbitrary: setting }, { weight: 1, arbitrary: anything });
    default: return fc.oneof({ weight: 4, arbitrary: durationLike }, { weight: 1, arbitrary: anything });
  }
};
/** A job-shaped object: some known fields with plausible or absurd values, sometimes an unknown one. */
const jobLike: fc.Arbitrary<Record<string, unknown>> = fc
  .tuple(
    fc.subarray(KNOWN, { minLength: 0 }).chain((keys) => fc.tuple(...keys.map((k) => fieldValue(k).map((v) => [k, v] as const)))),
    fc.option(fc.tuple(fc.constantFrom('retries', 'Cron', 'interval', '__proto__', 'constructor', 'toString', ''), anything), { freq: 5 }),
  )
  .map(([entries, extra]) => {
    const o: Record<string, unknown> = {};
    for (const [k, v] of [...entries, ...(extra ? [extra] : [])]) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
    return o;
  });

function describeValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 80 ? `${v.slice(0, 80)}…` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || v == null) return String(v);
  return `a ${Array.isArray(v) ? 'array' : typeof v}`;
}

/**
 * The error of a rejected definition: a LeaseholdError, and a message that names the job
 * (as it was given) and a field the definition has or should have.
 */
function assertNamesJobAndField(err: unknown, input: unknown): void {
  assert.ok(isLeaseholdError(err), `threw a non-LeaseholdError: ${String(err)}`);
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    assert.match(err.message, /^a job must be an object, got /);
    return;
  }
  const m = /^job (.+?): field "([^"]*)": ./s.exec(err.message);
  assert.ok(m, `the message names no job and field: ${err.message}`);
  const id = Object.getOwnPropertyDescriptor(input, 'id')?.value as unknown;
  const validId = typeof id === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(id);
  assert.equal(m[1], validId ? JSON.stringify(id) : describeValue(id), err.message);
  const field = m[2] ?? '';
  assert.ok(KNOWN.includes(field) || Object.keys(input).includes(field), `field ${field} is neither known nor given: ${err.message}`);
  if (!validId) assert.equal(field, 'id', err.message);
}

/** An accepted definition must be runnable: whole-ms limits and a trigger that moves forward. */
function assertRunnable(input: Record<string, unknown>): void {
  const job = normalizeJob(input);
  for (const ms of [job.initialDelayMs, job.leaseMs, job.timeoutMs ?? 1, job.misfireGraceMs ?? 0]) {
    assert.ok(Number.isSafeInteger(ms) && ms >= 0 && ms <= MAX_MS, `limit ${ms} of ${JSON.stringify(job.id)}`);
  }
  let eff;
  try {
    eff = resolveSchedule(job, readDeclaration(job.schedule, {}), {}, 0, undefined);
  } catch (err) {
    // A setting's live value is checked at each fire; its default at registration.
    assert.ok(isLeaseholdError(err), String(err));
    assert.fail(`accepted at registration, but its default schedule is invalid: ${err.message}`);
  }
  const after = Date.UTC(2026, 4, 5, 12);
  const next = eff.trigger.next(after);
  assert.ok(next === null || (Number.isFinite(next) && next > after), `next tick ${String(next)} of ${eff.trigger.kind} ${eff.trigger.expression}`);
  assert.ok(Number.isFinite(eff.trigger.intervalMs) && eff.trigger.intervalMs > 0, `interval ${eff.trigger.intervalMs}`);
  assert.ok(Number.isSafeInteger(eff.timeoutMs) && eff.timeoutMs > 0 && eff.timeoutMs <= MAX_MS, `timeout ${eff.timeoutMs}`);
}

function check(input: unknown): void {
  let accepted = true;
  try {
    normalizeJob(input);
  } catch (err) {
    accepted = false;
    assertNamesJobAndField(err, input);
  }
  if (accepted) assertRunnable(input as Record<string, unknown>);
  // defineJob runs the same checks and hands its argument back.
  try {
    assert.equal(defineJob(input as JobDefinition), input);
    assert.ok(accepted, 'defineJob accepted what normalizeJob rejected');
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    assert.ok(!accepted && isLeaseholdError(err), String(err));
  }
}

describe('job definitions: only LeaseholdErrors that name the job and the field', () => {
  test('any value at all', () => {
    fc.assert(fc.property(anything, check), params(2_000));
  });

  test('job-shaped objects with plausible and absurd field values', () => {
    fc.assert(fc.property(jobLike, check), params(4_000));
  });

  test('a period under half a millisecond is no period (it was accepted as 0 ms, and its next tick was NaN)', () => {
    for (const kind of ['fixedRate', 'fixedDelay'] as const) {
      for (const value of [0.4, '0.2ms', '0.0001s', Number.MIN_VALUE]) {
        assert.throws(() => normalizeJob({ id: 'tiny', [kind]: value, run }), (e: unknown) =>
          isLeaseholdError(e, 'invalidDuration') && e.message.startsWith(`job "tiny": field "${kind}": `) && /more than zero/.test(e.message));
      }
    }
    assert.throws(() => normalizeJob({ id: 'tiny', fixedRate: fromEnv('TINY_RATE', '0.3ms'), run }), /job "tiny": field "fixedRate": .*more than zero/);
    assert.throws(() => normalizeJob({ id: 'tiny', scope: 'installation', fixedRate: '1s', lease: 199.4, run }), /field "lease": must be at least 200ms/);
    fc.assert(fc.property(fc.double({ min: 0, max: 0.4999, noNaN: true }), fc.constantFrom('fixedRate', 'fixedDelay', 'timeout'), (v, field) => {
      const def = field === 'timeout' ? { id: 't', fixedRate: 1000, timeout: v, run } : { id: 't', [field]: v, run };
      assert.throws(() => normalizeJob(def), new RegExp(`field "${field}"`));
    }), params(300));
  });

  test('a cron read from the environment has its default checked like a literal cron', () => {
    const badDefault = { id: 'env-cron', cron: fromEnv('LEASEHOLD_FUZZ_UNSET_CRON', '0 0 25 * * *'), run };
    assert.throws(() => normalizeJob(badDefault), (e: unknown) =>
      isLeaseholdError(e, 'invalidCron') && /^job "env-cron": field "cron": .*hour/.test(e.message));
    // A literal and a default are judged alike, whatever the string.
    fc.assert(fc.property(cronLike, fc.option(zoneLike, { nil: undefined }), (expr, zone) => {
      const outcome = (cron: unknown): string => {
        try {
          normalizeJob({ id: 'c', cron, ...(zone === undefined ? {} : { zone }), run });
          return 'ok';
        } catch (err) {
          assert.ok(isLeaseholdError(err), String(err));
          return err.message.replace(/^job "c": field "(\w+)": .*$/s, '$1');
        }
      };
      assert.equal(outcome(fromEnv('LEASEHOLD_FUZZ_UNSET_CRON', expr)), outcome(expr), `cron ${JSON.stringify(expr)} zone ${String(zone)}`);
    }), params(1_500));
  });

  test('getters and proxies that throw are named as the field being read', () => {
    fc.assert(fc.property(fc.constantFrom(...KNOWN), anything, (field, thrown) => {
      const def: Record<string, unknown> = { id: 'getter', fixedRate: '1s', run };
      Object.defineProperty(def, field, { enumerable: true, get: () => { throw thrown; } });
      assert.throws(() => normalizeJob(def), (e: unknown) => {
        assert.ok(isLeaseholdError(e, 'invalidJob'), String(e));
        assert.match(e.message, new RegExp(`^job (${field === 'id' ? '\\?' : '"getter"'}): field "${field}": reading it threw: `));
        return true;
      });
    }), params(300));
    const nested = { id: 'nested', fixedRate: { get env(): string { throw new Error('env getter'); }, default: '1s' }, run };
    assert.throws(() => normalizeJob(nested), (e: unknown) => isLeaseholdError(e) && e.message === 'job "nested": field "fixedRate": reading it threw: env getter');
    const trap = new Proxy({}, { ownKeys() { throw new TypeError('no keys'); }, get: (_t, k) => (k === 'id' ? 'proxied' : k === 'fixedRate' ? 1000 : k === 'run' ? run : undefined) });
    assert.throws(() => normalizeJob(trap), (e: unknown) => isLeaseholdError(e) && e.message.startsWith('job "proxied": field "id": reading it threw: no keys'));
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    assert.throws(() => normalizeJob(revoked.proxy), (e: unknown) => isLeaseholdError(e) && /^job \?: field "id": reading it threw: /.test(e.message));
  });

  test('runner.add throws the same errors, and a runner with bad additions still takes good jobs', () => {
    const runner = createRunner({ local: true, logger: pino({ level: 'silent' }), instanceId: 'fuzz-add' });
    let added = 0;
    fc.assert(fc.property(jobLike, (def) => {
      try {
        runner.add(def as unknown as JobDefinition);
        added++;
      } catch (err) {
        if (isLeaseholdError(err, 'duplicateJob')) {
          assert.match(err.message, /^job ".+": field "id": another job has the same id$/);
          return;
        }
        assertNamesJobAndField(err, def);
      }
    }), params(1_500));
    const before = runner.jobs().length;
    assert.equal(before, added);
    runner.add({ id: 'still-good', fixedRate: '1s', run });
    assert.equal(runner.jobs().length, before + 1);
  });
});

describe('durations: only invalidDuration, and whole milliseconds a timer can wait', () => {
  const property = (value: unknown, allowZero: boolean): void => {
    let ms: number;
    try {
      ms = readDuration(value, 'job "d": field "timeout"', allowZero);
    } catch (err) {
      assert.ok(isLeaseholdError(err, 'invalidDuration'), String(err));
      assert.ok(err.message.startsWith('job "d": field "timeout": '), err.message);
      assert.ok(err.message.length < 300, 'the message quotes a short form of the value');
      return;
    }
    assert.ok(Number.isSafeInteger(ms) && !Object.is(ms, -0), `${String(ms)} is not a whole number`);
    assert.ok(ms >= (allowZero ? 0 : 1) && ms <= MAX_MS, `${ms} out of range`);
  };

  test('any value', () => {
    fc.assert(fc.property(fc.oneof(anything, durationLike), fc.boolean(), property), params(3_000));
  });

  test('number-and-unit strings mean what they say, rounded to the millisecond', () => {
    const unitMs: Record<string, number> = { '': 1, ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
    fc.assert(fc.property(
      fc.stringMatching(/^\d{1,6}(\.\d{1,3})?$/), fc.constantFrom('', ' ', '  '), fc.constantFrom(...Object.keys(unitMs)), fc.constantFrom('', ' ', '\n'), fc.boolean(),
      (num, gap, unit, pad, allowZero) => {
        const text = `${pad}${num}${unit === '' ? '' : gap}${unit}${pad}`;
        const expected = Math.round(Number(num) * (unitMs[unit] ?? 1));
        const valid = expected <= MAX_MS && (allowZero || expected > 0);
        if (valid) assert.equal(readDuration(text, 'd', allowZero), expected, JSON.stringify(text));
        else assert.throws(() => readDuration(text, 'd', allowZero), LeaseholdError, JSON.stringify(text));
      },
    ), params(2_000));
  });

  test('formatDuration and readDuration round-trip', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: MAX_MS }), (ms) => {
      assert.equal(readDuration(formatDuration(ms), 'd'), ms);
    }), params(1_000));
  });
});
