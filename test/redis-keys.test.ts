import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isLeaseholdError } from '../src/errors.js';
import { DEFAULT_PREFIX, KEY_TABLE, keys } from '../src/redis/keys.js';

describe('redis keys', () => {
  const k = keys('lh-test');

  it('puts the job id in a hash tag for every per-job key', () => {
    assert.equal(k.lease('a.b'), 'lh-test:{a.b}:lease');
    assert.equal(k.state('a.b'), 'lh-test:{a.b}:state');
    assert.equal(k.stats('a.b'), 'lh-test:{a.b}:stats');
    assert.equal(k.instanceStats('a.b'), 'lh-test:{a.b}:instances');
    assert.equal(k.runs('a.b'), 'lh-test:{a.b}:runs');
    assert.equal(k.writers('a.b'), 'lh-test:{a.b}:writers');
  });

  it('builds the cluster-wide keys', () => {
    assert.equal(k.settings, 'lh-test:settings');
    assert.equal(k.jobs, 'lh-test:jobs');
    assert.equal(k.instances, 'lh-test:instances');
    assert.equal(k.instance('host-12'), 'lh-test:instance:host-12');
    assert.equal(k.control, 'lh-test:control');
    assert.equal(k.executors, 'lh-test:executors');
    assert.equal(k.queues, 'lh-test:queues');
    assert.equal(k.taskQueue('mail'), 'lh-test:tasks:{mail}');
    assert.equal(k.taskPrefix, 'lh-test:tasks');
  });

  it('defaults the prefix to leasehold', () => {
    assert.equal(DEFAULT_PREFIX, 'leasehold');
    assert.equal(keys().stats('j'), 'leasehold:{j}:stats');
  });

  it('rejects prefixes and ids that would break a key or its hash tag', () => {
    for (const bad of ['', 'a b', 'a{b', 'a}b', 'tab\there', 'nl\n']) {
      assert.throws(() => keys(bad), (err) => isLeaseholdError(err, 'invalidConfig') && err.message.includes('key prefix'));
      assert.throws(() => k.lease(bad), (err) => isLeaseholdError(err, 'invalidConfig') && err.message.includes('job id'));
      assert.throws(() => k.instance(bad), (err) => isLeaseholdError(err, 'invalidConfig') && err.message.includes('instance id'));
    }
  });

  it('describes every key it builds, and nothing else', () => {
    const built = keys('_prefix_');
    const sample = [
      built.lease('J'), built.state('J'), built.stats('J'), built.instanceStats('J'),
      built.runs('J'), built.writers('J'), built.settings, built.jobs, built.instances, built.nodes,
      built.instance('I'), built.registered('D'), built.control, built.epoch, built.executors, built.queues, `${built.taskQueue('E')}:*`,
    ].map((key) => key.replace('_prefix_', '<prefix>').replace('{J}', '{<jobId>}').replace('{E}', '{<executor>}').replace(/:I$/, ':<id>').replace(/:D$/, ':<digest>'));
    assert.deepEqual([...sample].sort(), KEY_TABLE.map((row) => row.pattern).sort());
    for (const row of KEY_TABLE) assert.ok(row.purpose.length > 0, row.pattern);
  });
});
