/**
 * A binary min-heap ordered by `at`, then by insertion: the runner's timetable.
 * @module
 */

/** An entry of the timetable. */
export interface HeapEntry {
  readonly at: number;
  readonly seq: number;
}

/** A min-heap of entries by `at` (ties by `seq`, so equal times keep their order). */
export class MinHeap<T extends HeapEntry> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const a = this.items;
    // Move parents down into the hole until the item's place is found (no swaps).
    let i = a.length;
    a.push(item);
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = a[p] as T;
      if (!this.less(item, parent)) break;
      a[i] = parent;
      i = p;
    }
    a[i] = item;
  }

  pop(): T | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    const n = a.length;
    if (n > 0 && last !== undefined) {
      // Move the smaller child up into the hole until `last` fits there.
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const m = r < n && this.less(a[r] as T, a[l] as T) ? r : l;
        const child = a[m] as T;
        if (!this.less(child, last)) break;
        a[i] = child;
        i = m;
      }
      a[i] = last;
    }
    return top;
  }

  clear(): void {
    this.items.length = 0;
  }

  private less(x: T, y: T): boolean {
    return x.at < y.at || (x.at === y.at && x.seq < y.seq);
  }
}
