/**
 * The one cache of cron work, keyed by the text it was asked for: zones checked, expressions
 * parsed, and the triggers the schedule layer shares between jobs on the same expression and
 * zone. Ten thousand jobs on one schedule then check its zone and parse it once, and a status
 * read of a thousand cron jobs builds no croner instance. At most {@link MAX_CRON_CACHE}
 * entries are kept, the oldest dropped first (a parsed expression holds about 80 KB of
 * croner's tables); a hit does not move its entry, which keeps a hit cheap when 10,000 jobs
 * register (docs/benchmarks.md).
 * @module
 */

/** How many entries the cache keeps. */
export const MAX_CRON_CACHE = 1_000;

/** What `make` threw for a key, remembered like a value. */
class Failed {
  constructor(readonly error: unknown) {}
}

const entries = new Map<string, object>();

/**
 * The value remembered under `key`, made by `make` when there is none. What `make` throws is
 * remembered too and thrown again: a stored schedule that does not parse (a hand edit, a node
 * of another version) is met at every status read of its job, and is not parsed each time. A
 * key starts with what its value is (`zone `, `cron `, `trigger `), so a key always names a
 * value of the one type its maker gives.
 */
export function remember<T extends object>(key: string, make: () => T): T {
  const known = entries.get(key);
  if (known instanceof Failed) throw known.error;
  if (known !== undefined) return known as T;
  let made: T;
  try {
    made = make();
  } catch (err) {
    keep(key, new Failed(err));
    throw err;
  }
  keep(key, made);
  return made;
}

function keep(key: string, value: object): void {
  if (entries.size >= MAX_CRON_CACHE) {
    const oldest = entries.keys().next();
    if (!oldest.done) entries.delete(oldest.value);
  }
  entries.set(key, value);
}
