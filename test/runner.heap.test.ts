/**
 * The runner's timetable heap and the shared cron triggers, checked against plain references
 * with random inputs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MinHeap } from '../src/runner/heap.js';
import { cronTrigger } from '../src/schedule/trigger.js';
import { parseCron } from '../src/cron/index.js';

test('the heap pops by time, equal times in insertion order, under any mix of pushes and pops', () => {
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.integer({ min: 0, max: 20 }), fc.constant(-1)), { maxLength: 300 }), (ops) => {
      const heap = new MinHeap<{ at: number; seq: number }>();
      const model: Array<{ at: number; seq: number }> = [];
      let seq = 0;
      for (const op of ops) {
        if (op >= 0) {
          const e = { at: op, seq: ++seq };
          heap.push(e);
          model.push(e);
        } else {
          model.sort((a, b) => a.at - b.at || a.seq - b.seq);
          assert.equal(heap.pop(), model.shift());
        }
        assert.equal(heap.size, model.length);
      }
      model.sort((a, b) => a.at - b.at || a.seq - b.seq);
      for (const e of model) assert.equal(heap.pop(), e);
      assert.equal(heap.pop(), undefined);
    }),
    { numRuns: 300 },
  );
});

test('a shared cron trigger answers every instant as the cron itself does, in any order of questions', () => {
  const expressions = ['*/10 * * * * *', '0 30 2 * * *', '0 0 0 L * *', '0 15 10 ? * MON-FRI'];
  fc.assert(
    fc.property(
      fc.constantFrom(...expressions),
      fc.constantFrom('UTC', 'America/New_York', 'Europe/Berlin'),
      fc.array(fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 11, 31) }), { minLength: 1, maxLength: 40 }),
      (expr, zone, instants) => {
        const trigger = cronTrigger(expr, zone);
        const cron = parseCron(expr, { zone });
        // Questions near each other (the same tick) and far apart, forwards and back.
        for (const at of instants.flatMap((t) => [t, t + 1, t - 1, t + 999])) {
          assert.equal(trigger.next(at), cron.next(new Date(at))?.getTime() ?? null, `${expr} ${zone} after ${new Date(at).toISOString()}`);
        }
      },
    ),
    { numRuns: 200 },
  );
  assert.equal(cronTrigger('0 0 * * * *', 'UTC'), cronTrigger('0 0 * * * *', 'UTC'), 'one trigger per expression and zone');
});
