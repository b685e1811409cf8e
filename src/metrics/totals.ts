/**
 * Counters fed from totals that another part keeps (a map of label value to total so far):
 * each scrape adds what each total grew by since the last.
 * @module
 */
import { Counter, type Registry } from 'prom-client';

/**
 * Registers a counter `name` with one label, read at each scrape from `totals` (none: the
 * counter has no series).
 */
export function countedTotals(registers: Registry[], name: string, help: string, label: string, totals: (() => ReadonlyMap<string, number>) | undefined): void {
  const counted = new Map<string, number>();
  new Counter({
    name,
    help,
    labelNames: [label],
    registers,
    collect() {
      for (const [value, total] of totals?.() ?? []) {
        this.inc({ [label]: value }, Math.max(0, total - (counted.get(value) ?? 0)));
        counted.set(value, total);
      }
    },
  });
}
