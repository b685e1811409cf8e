/**
 * Where Redis is, for Cluster and Sentinel: node lists, targets, runner options, the slot
 * rule the status pipelines are split by, and `leasehold status`'s options. No server needed
 * but for the pipeline tests, which use a single private redis-server.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, Redis } from 'ioredis';
import { isLeaseholdError } from '../src/errors.js';
import { createRedis } from '../src/redis/connection.js';
import { describeTarget, parseNodeList, splitList } from '../src/redis/target.js';
import { pipelined, slotKey } from '../src/redis/pipeline.js';
import { resolveRunnerOptions } from '../src/create/index.js';
import { runStatus } from '../src/cli/status.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const SECRET = 'n0t-f0r-l0gs';

describe('node lists', () => {
  it('splits the environment\'s lists', () => {
    assert.deepEqual(splitList(' a:1, b:2 ,,c:3 '), ['a:1', 'b:2', 'c:3']);
    assert.deepEqual(splitList(''), []);
  });

  it('reads host:port, IPv6 and URL entries, with the default port', () => {
    assert.deepEqual(parseNodeList(['10.0.0.1:7000', 'redis-b', '[::1]:7002'], 'REDIS_CLUSTER_NODES', 6379), {
      nodes: [{ host: '10.0.0.1', port: 7000 }, { host: 'redis-b', port: 6379 }, { host: '::1', port: 7002 }],
      options: {},
    });
    const list = parseNodeList([`rediss://app:${SECRET}@s1:26380`, 's2', 'rediss://app:n0t-f0r-l0gs@s3'], 'REDIS_SENTINELS', 26379);
    assert.deepEqual(list.nodes, [{ host: 's1', port: 26380 }, { host: 's2', port: 26379 }, { host: 's3', port: 26379 }]);
    assert.deepEqual(list.options, { username: 'app', password: SECRET, tls: {} });
  });

  it('refuses bad entries and disagreeing credentials, naming the setting and never the password', () => {
    const bad: string[][] = [[], ['host:99999'], ['a b:1'], ['host:'], [`http://u:${SECRET}@h:1`], [`redis://u:${SECRET}@a:1`, 'redis://u:other@b:2'], [`redis://u:${SECRET}@a:1`, 'redis://v:' + SECRET + '@b:2']];
    for (const entries of bad) {
      assert.throws(() => parseNodeList(entries, 'REDIS_CLUSTER_NODES', 6379), (err) => {
        assert.ok(isLeaseholdError(err, 'invalidRedisTarget'), JSON.stringify(entries));
        assert.match(err.message, /REDIS_CLUSTER_NODES|Redis url/);
        assert.ok(!err.message.includes(SECRET), err.message);
        return true;
      });
    }
  });

  it('describes a target for logs without its passwords', () => {
    assert.equal(describeTarget({ url: `redis://u:${SECRET}@h:1` }), 'redis://u:***@h:1');
    assert.equal(describeTarget({ clusterNodes: [`redis://u:${SECRET}@a:1`, 'b:2'] }), 'cluster redis://u:***@a:1,b:2');
    assert.equal(describeTarget({ sentinels: ['s1:26379'], sentinelName: 'main' }), 'sentinel master "main" via s1:26379');
  });
});

describe('targets', () => {
  it('a Cluster target makes an ioredis Cluster, a Sentinel target a Redis that asks the Sentinels', () => {
    const cluster = createRedis({ target: { clusterNodes: ['127.0.0.1:1'] }, role: 'lease' });
    const sentinel = createRedis({ target: { sentinels: ['127.0.0.1:1'], sentinelName: 'main' }, role: 'stats' });
    try {
      assert.ok(cluster instanceof Cluster);
      assert.equal(cluster.options.enableOfflineQueue, false, 'the lease connection fails fast on a Cluster too');
      assert.equal(cluster.options.redisOptions?.commandTimeout, 2000);
      assert.ok(sentinel instanceof Redis);
      assert.equal(sentinel.options.name, 'main');
      assert.deepEqual(sentinel.options.sentinels, [{ host: '127.0.0.1', port: 1 }]);
      assert.equal(sentinel.options.enableOfflineQueue, false);
    } finally {
      cluster.on('error', () => undefined).disconnect();
      sentinel.on('error', () => undefined).disconnect();
    }
  });

  it('refuses a Sentinel target without a master name, a database on a Cluster, and two targets at once', () => {
    assert.throws(() => createRedis({ target: { sentinels: ['s:1'], sentinelName: '' }, role: 'lease' }), (err) => isLeaseholdError(err, 'invalidRedisTarget'));
    assert.throws(() => createRedis({ target: { clusterNodes: ['redis://a:1/2'] }, role: 'lease' }), /only database 0/);
    assert.throws(() => createRedis({ url: 'redis://a:1', target: { clusterNodes: ['a:1'] }, role: 'lease' }), (err) => isLeaseholdError(err, 'invalidRedisTarget'));
  });

  it('the runner takes one of redisUrl, redisClusterNodes, redisSentinels (with its name) and redis', () => {
    assert.deepEqual(resolveRunnerOptions({ redisClusterNodes: ['a:1', 'b:2'] }).target, { clusterNodes: ['a:1', 'b:2'] });
    assert.deepEqual(resolveRunnerOptions({ redisSentinels: ['s:1'], redisSentinelName: 'main' }).target, { sentinels: ['s:1'], sentinelName: 'main' });
    assert.deepEqual(resolveRunnerOptions({ redisUrl: 'redis://a:1' }).target, { url: 'redis://a:1' });
    assert.equal(resolveRunnerOptions({}).target, undefined);
    assert.throws(() => resolveRunnerOptions({ redisUrl: 'redis://a:1', redisClusterNodes: ['a:1'] }), /only one of/);
    assert.throws(() => resolveRunnerOptions({ redisSentinels: ['s:1'] }), /go together/);
    assert.throws(() => resolveRunnerOptions({ redisSentinelName: 'main' }), /go together/);
  });

  it('leasehold status takes the Cluster and Sentinel settings too, and says what is missing', async () => {
    const none = await runStatus([], {});
    assert.equal(none.code, 2);
    assert.match(none.stderr, /REDIS_CLUSTER_NODES/);
    assert.equal((await runStatus([], { REDIS_SENTINELS: 's:1' })).code, 2);
    assert.match((await runStatus([], { REDIS_SENTINELS: 's:1' })).stderr, /REDIS_SENTINEL_NAME/);
    assert.match((await runStatus([], { REDIS_URL: 'redis://a:1', REDIS_CLUSTER_NODES: 'a:1' })).stderr, /only one of/);
    assert.equal((await runStatus(['--redis-cluster-nodes', 'bad entry'], {})).code, 2);
  });
});

describe('slots', () => {
  it('follows the hash tag rule of the Redis Cluster specification', () => {
    assert.equal(slotKey('leasehold:{nightly}:lease'), 'nightly');
    assert.equal(slotKey('leasehold:{nightly}:stats'), slotKey('leasehold:{nightly}:lease'));
    assert.equal(slotKey('leasehold:settings'), 'leasehold:settings');
    assert.equal(slotKey('a{}b{c}'), 'a{}b{c}', 'an empty tag makes the whole key count');
    assert.equal(slotKey('a{b}{c}'), 'b', 'only the first tag counts');
    assert.equal(slotKey('a{b'), 'a{b');
  });
});

describe('pipelines on a single Redis', () => {
  let server: TestRedis;
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    await server.stop();
  });

  it('stay one pipeline, with the replies in order, errors in place', async () => {
    const redis = server.client();
    await redis.set('p:{a}:x', '1');
    await redis.hset('p:settings', 'k', 'v');
    const replies = await pipelined(redis, [
      { key: undefined, queue: (p) => p.time() },
      { key: 'p:{a}:x', queue: (p) => p.get('p:{a}:x').hgetall('p:{a}:x') },
      { key: 'p:settings', queue: (p) => p.hgetall('p:settings') },
    ]);
    assert.equal(replies.length, 4);
    assert.ok(Array.isArray(replies[0]?.[1]));
    assert.deepEqual(replies[1], [null, '1']);
    assert.match(String(replies[2]?.[0]), /WRONGTYPE/);
    assert.deepEqual(replies[3], [null, { k: 'v' }]);
  });

  it('give every command the error of a pipeline that failed as a whole', async () => {
    const down = createRedis({ url: 'redis://127.0.0.1:1', role: 'stats' });
    down.on('error', () => undefined);
    try {
      const replies = await pipelined(down, [
        { key: 'a', queue: (p) => p.get('a') },
        { key: 'b', queue: (p) => p.get('b').get('c') },
      ]);
      assert.equal(replies.length, 3);
      for (const [err] of replies) assert.ok(err instanceof Error);
    } finally {
      down.disconnect();
    }
  });
});
