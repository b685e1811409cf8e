/**
 * `leasehold_unhandled_errors_total{kind}`: the rejections nobody handled and exceptions nobody
 * caught that a runner reported (`createRunner({ unhandled })`), read from its totals at each
 * scrape, both kinds from zero.
 * @module
 */
import { Counter, type Registry } from 'prom-client';

/** The totals a runner keeps, by kind. */
export interface UnhandledFigures {
  readonly rejection: number;
  readonly exception: number;
}

/** Registers the counter in `registers`, fed by `figures` at each scrape. */
export function unhandledCounter(registers: Registry[], figures: (() => UnhandledFigures) | undefined): void {
  const counted = { rejection: 0, exception: 0 };
  new Counter({
    name: 'leasehold_unhandled_errors_total',
    help: 'Rejections nobody handled (kind="rejection") and exceptions nobody caught (kind="exception") in this process, reported by this runner; only with the runner option unhandled (leasehold start: always).',
    labelNames: ['kind'],
    registers,
    collect() {
      const now = figures?.() ?? counted;
      for (const kind of ['rejection', 'exception'] as const) {
        this.inc({ kind }, Math.max(0, now[kind] - counted[kind]));
        counted[kind] = now[kind];
      }
    },
  });
}
