/**
 * Reads Prometheus text as the metrics tests check it.
 */

/** Each sample of a scrape, by its name and labels as written (`name{a="b"}`), to its value. */
export function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([^#\s][^ ]*) (\S+)$/.exec(line);
    if (m) out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

/** The `job` labels of a scrape's samples (its HELP lines name `(other)` too). */
export function jobsNamedIn(text: string): Set<string> {
  return new Set([...samples(text).keys()].flatMap((k) => /job="([^"]*)"/.exec(k)?.[1] ?? []));
}
