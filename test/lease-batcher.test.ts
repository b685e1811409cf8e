/**
 * The batcher under the lease store: what is sent in one turn of the event loop goes out
 * together, in calls of at most the given size, at the turn's end or at flush().
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { batcher } from '../src/lease/batcher.js';

function recording(answer: (item: number) => number | Error = (n) => n * 10) {
  const calls: number[][] = [];
  const call = async (items: readonly number[]) => {
    calls.push([...items]);
    return items.map(answer);
  };
  return { calls, call };
}

test('items sent in one turn go out as calls of at most maxItems, each caller with its own answer', async () => {
  const { calls, call } = recording();
  const b = batcher(call, 3);
  const answers = await Promise.all([1, 2, 3, 4, 5].map((n) => b.send(n)));
  assert.deepEqual(answers, [10, 20, 30, 40, 50]);
  assert.deepEqual(calls, [[1, 2, 3], [4, 5]]);
});

test('flush() sends what waits now; later items wait for the next flush or the turn\'s end', async () => {
  const { calls, call } = recording();
  const b = batcher(call, 100);
  const first = b.send(1);
  b.flush();
  assert.deepEqual(calls, [[1]]);
  const second = b.send(2);
  assert.deepEqual(calls, [[1]]);
  assert.deepEqual(await Promise.all([first, second]), [10, 20]);
  assert.deepEqual(calls, [[1], [2]]);
});

test('an item\'s own error rejects that item only; a failed call rejects every item it carried', async () => {
  const b = batcher(recording((n) => (n === 2 ? new Error('bad 2') : n)).call, 100);
  const settled = await Promise.allSettled([b.send(1), b.send(2), b.send(3)]);
  assert.deepEqual(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message)), [1, 'bad 2', 3]);
  const failing = batcher<number, number>(async () => {
    throw new Error('connection lost');
  }, 100);
  const all = await Promise.allSettled([failing.send(1), failing.send(2)]);
  assert.deepEqual(all.map((s) => s.status === 'rejected' && (s.reason as Error).message), ['connection lost', 'connection lost']);
});

test('with maxItems 1 each item is sent at once, alone', async () => {
  const { calls, call } = recording();
  const b = batcher(call, 1);
  const answers = [b.send(1), b.send(2)];
  assert.deepEqual(calls, [[1], [2]]);
  assert.deepEqual(await Promise.all(answers), [10, 20]);
});
