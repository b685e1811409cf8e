/**
 * The cached status (`status/snapshot.ts`): its JSON text is the value's, made when first
 * asked for and once, so that the pages of an installation too large for one answer never
 * cost the text of the whole status.
 * @module
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SnapshotCache } from '../src/status/snapshot.js';

describe('status snapshot', () => {
  it('encodes the JSON text when first asked for, once per read, and never when only the value is used', async () => {
    let encoded = 0;
    let reads = 0;
    const read = async () => {
      reads++;
      return { jobs: [{ id: 'a', runs: reads }], toJSON() { encoded++; return { jobs: this.jobs }; } };
    };
    const cache = new SnapshotCache(read, (err) => assert.fail(String(err)));
    const first = await cache.get();
    assert.equal(first.value.jobs[0]?.runs, 1);
    assert.equal(encoded, 0, 'a page cut from the value encodes nothing');
    assert.deepEqual(JSON.parse(first.json.toString('utf8')), { jobs: [{ id: 'a', runs: 1 }] });
    assert.equal(encoded, 1);
    const again = await cache.get();
    assert.equal(again, first, 'fresh: the same snapshot');
    assert.equal(again.json, first.json, 'the same buffer, not encoded again');
    assert.equal(encoded, 1);
    cache.invalidate();
    const next = await cache.get();
    assert.equal(next.value.jobs[0]?.runs, 2);
    assert.deepEqual(JSON.parse(next.json.toString('utf8')), { jobs: [{ id: 'a', runs: 2 }] }, 'a new read has its own text');
    assert.equal(encoded, 2);
  });

  it('makes the text as soon as a read is in when asked to, so that no request waits for it', async () => {
    let encoded = 0;
    const read = async () => ({ jobs: [{ id: 'a' }], toJSON() { encoded++; return { jobs: this.jobs }; } });
    const ahead = new SnapshotCache(read, (err) => assert.fail(String(err)), undefined, { encodeAhead: (v) => v.jobs.length <= 1 });
    const snap = await ahead.get();
    assert.equal(encoded, 0, 'not in the turn of the read');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(encoded, 1, 'made in the next turn');
    assert.deepEqual(JSON.parse(snap.json.toString('utf8')), { jobs: [{ id: 'a' }] });
    assert.equal(encoded, 1, 'the text made ahead is the one answered');

    let big = 0;
    const large = new SnapshotCache(async () => ({ jobs: [1, 2], toJSON() { big++; return {}; } }), (err) => assert.fail(String(err)), undefined, { encodeAhead: (v) => v.jobs.length <= 1 });
    await large.get();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(big, 0, 'a value the predicate refuses is never encoded ahead');
  });
});
