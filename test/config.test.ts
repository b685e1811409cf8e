/**
 * The checks of a node's configuration (src/config.ts) that `createRunner`, `leasehold start`
 * and `leasehold status` share: each names the setting by the caller's name for it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkInstanceId, checkPrefix, checkRedisSource, type RedisSourceNames } from '../src/config.js';
import { isLeaseholdError, type ErrorCode } from '../src/errors.js';

const OPTIONS: RedisSourceNames = { url: 'redisUrl', clusterNodes: 'redisClusterNodes', sentinels: 'redisSentinels', sentinelName: 'redisSentinelName', client: 'redis' };
const VARIABLES: RedisSourceNames = { url: 'REDIS_URL', clusterNodes: 'REDIS_CLUSTER_NODES', sentinels: 'REDIS_SENTINELS', sentinelName: 'REDIS_SENTINEL_NAME' };
const none = { url: undefined, clusterNodes: undefined, sentinels: undefined, sentinelName: undefined };

function refused(fn: () => unknown, message: RegExp, code: ErrorCode = 'invalidConfig'): void {
  assert.throws(fn, (err: unknown) => isLeaseholdError(err, code) && message.test(err.message));
}

describe('prefix and instance id', () => {
  it('accepts the documented characters and names the setting of a bad value', () => {
    assert.equal(checkPrefix('leasehold.prod:1', 'prefix'), 'leasehold.prod:1');
    assert.equal(checkInstanceId('node-1@host_a.b:2', 'instanceId'), 'node-1@host_a.b:2');
    refused(() => checkPrefix('has space', 'LEASEHOLD_PREFIX/--prefix'), /^LEASEHOLD_PREFIX\/--prefix: "has space" must be 1 to 64 letters/);
    refused(() => checkPrefix('a{b}', 'prefix'), /^prefix: "a\{b\}" must be/);
    refused(() => checkPrefix('x'.repeat(65), 'prefix'), /^prefix: "x{65}" must be/);
    refused(() => checkPrefix('', 'prefix'), /^prefix: "" must be/);
    refused(() => checkInstanceId('a/b', 'instanceId'), /^instanceId: "a\/b" must be 1 to 128 letters, digits or \. _ : @ -$/);
    refused(() => checkInstanceId('x'.repeat(129), 'instanceId'), /^instanceId: "x{80}…" must be/);
    refused(() => checkInstanceId(7, 'instanceId'), /^instanceId: number must be/);
  });
});

describe('Redis source', () => {
  it('returns the one given, or undefined for none', () => {
    assert.equal(checkRedisSource(none, OPTIONS), undefined);
    assert.equal(checkRedisSource({ ...none, url: 'redis://a:1' }, OPTIONS), 'url');
    assert.equal(checkRedisSource({ ...none, clusterNodes: ['a:1'] }, OPTIONS), 'clusterNodes');
    assert.equal(checkRedisSource({ ...none, sentinels: ['s:1'], sentinelName: 'main' }, OPTIONS), 'sentinels');
    assert.equal(checkRedisSource({ ...none, client: {} }, OPTIONS), 'client');
  });

  it('refuses two sources, naming every one and the ones given', () => {
    refused(() => checkRedisSource({ ...none, url: 'redis://a:1', client: {} }, OPTIONS), /^give only one of redisUrl, redisClusterNodes, redisSentinels and redis, not redisUrl and redis$/, 'invalidRedisTarget');
    refused(() => checkRedisSource({ ...none, url: 'redis://a:1', clusterNodes: 'a:1' }, VARIABLES), /^give only one of REDIS_URL, REDIS_CLUSTER_NODES and REDIS_SENTINELS, not REDIS_URL and REDIS_CLUSTER_NODES$/, 'invalidRedisTarget');
  });

  it('Sentinels need the master name; a lone name is refused, or ignored where asked', () => {
    refused(() => checkRedisSource({ ...none, sentinels: 's:1' }, VARIABLES, 'ignored'), /^REDIS_SENTINELS without REDIS_SENTINEL_NAME: the two go together$/, 'invalidRedisTarget');
    refused(() => checkRedisSource({ ...none, sentinelName: 'main' }, OPTIONS), /^redisSentinelName without redisSentinels: the two go together$/, 'invalidRedisTarget');
    assert.equal(checkRedisSource({ ...none, url: 'redis://a:1', sentinelName: 'main' }, VARIABLES, 'ignored'), 'url');
  });
});
