/**
 * Gathers the items asked for in one turn of the event loop into calls of a function that
 * takes many, so the claims (or releases) of jobs due together go out as one script call.
 * @module
 */

/** Sends items in calls of many; see {@link batcher}. */
export interface Batcher<I, R> {
  /** Resolves to `item`'s answer; rejects with its own error, or the error of the call that carried it. */
  send(item: I): Promise<R>;
  /** Sends what is waiting now rather than when the turn's I/O is done. */
  flush(): void;
}

interface Waiting<I, R> {
  readonly item: I;
  resolve(answer: R): void;
  reject(err: unknown): void;
}

/**
 * Calls `call` with the items sent in one turn of the event loop, at most `maxItems` per call,
 * when the turn's I/O is done (`setImmediate`) or at `flush()`. `call` answers each item in
 * order, with its answer or its own error. With `maxItems` 1 each item is sent at once, alone.
 */
export function batcher<I, R>(call: (items: readonly I[]) => Promise<Array<R | Error>>, maxItems: number): Batcher<I, R> {
  let waiting: Array<Waiting<I, R>> = [];

  const dispatch = async (batch: ReadonlyArray<Waiting<I, R>>): Promise<void> => {
    try {
      const answers = await call(batch.map((w) => w.item));
      batch.forEach((w, i) => {
        const answer = answers[i];
        if (answer instanceof Error) w.reject(answer);
        else if (i < answers.length) w.resolve(answer as R);
        else w.reject(new Error(`no answer for item ${i + 1} of ${batch.length}`));
      });
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  };

  const flush = (): void => {
    const all = waiting;
    waiting = [];
    for (let i = 0; i < all.length; i += maxItems) void dispatch(all.slice(i, i + maxItems));
  };

  return {
    send(item) {
      return new Promise<R>((resolve, reject) => {
        if (maxItems <= 1) {
          void dispatch([{ item, resolve, reject }]);
        } else if (waiting.push({ item, resolve, reject }) === 1) {
          setImmediate(flush);
        }
      });
    },
    flush,
  };
}
