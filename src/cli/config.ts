/**
 * The node's configuration: every flag and environment variable in one table, from which
 * the parser and the README's reference are made.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { checkInstanceId, checkPrefix, checkRedisSource, type RedisSourceNames } from '../config.js';
import { checkToken } from '../http/auth.js';
import { DEFAULT_PREFIX, EXECUTOR_ENV_DOCS } from '../create/command.js';
import { readDuration } from '../schedule/duration.js';
import type { HelpOption } from './help.js';

/** One configuration setting. */
export interface ConfigEntry {
  /** Key in the parsed config. */
  readonly key: keyof NodeConfig;
  /** A flag without a value. */
  readonly boolean?: boolean;
  /** Command-line flag, if any (secrets have none: a flag shows in `ps`). */
  readonly flag: string | undefined;
  /** What the flag's value is, as the help shows it: `--port <port>`. */
  readonly value?: string;
  /** Environment variable, if any. */
  readonly env: string | undefined;
  /** Default, as documented. */
  readonly default: string;
  /** What it means. */
  readonly description: string;
}

/** The parsed configuration of `leasehold start`. */
export interface NodeConfig {
  jobs: string | undefined;
  redisUrl: string | undefined;
  redisClusterNodes: string | undefined;
  redisSentinels: string | undefined;
  redisSentinelName: string | undefined;
  prefix: string;
  port: number;
  host: string;
  instanceId: string | undefined;
  adminToken: string | undefined;
  readToken: string | undefined;
  metricsToken: string | undefined;
  cookieSecret: string | undefined;
  trustProxy: boolean | number | string;
  mcpAllowedOrigins: string | undefined;
  shutdownGrace: string;
  logLevel: string;
  logFormat: string | undefined;
  recentRuns: number | undefined;
  metricsJobLimit: number | undefined;
  handoffDelay: string | undefined;
  eventsMaxClients: number | undefined;
  privateRedis: boolean;
  local: boolean;
}

/** Every setting of `leasehold start`. The README's configuration table is checked against this. */
export const CONFIG: readonly ConfigEntry[] = [
  { key: 'jobs', flag: '--jobs', value: 'module', env: undefined, default: '(required)', description: 'Module (`.js`, `.mjs`, `.ts`) whose default export is an array of jobs.' },
  { key: 'redisUrl', flag: '--redis-url', value: 'url', env: 'REDIS_URL', default: '(none)', description: '`redis://` or `rediss://` URL, with user, password and db. Without any Redis setting, a module with installation jobs is refused (every replica would run them) unless `--local` or `--private-redis` is given.' },
  { key: 'redisClusterNodes', flag: '--redis-cluster-nodes', value: 'host:port,...', env: 'REDIS_CLUSTER_NODES', default: '(none)', description: 'Redis Cluster seed nodes, `host:port,host:port`; an entry may be a `redis://` or `rediss://` URL whose user, password and TLS apply to every node.' },
  { key: 'redisSentinels', flag: '--redis-sentinels', value: 'host:port,...', env: 'REDIS_SENTINELS', default: '(none)', description: 'Sentinels, `host:port,host:port`; needs `REDIS_SENTINEL_NAME`. An entry may be a `redis://` or `rediss://` URL whose user, password and TLS apply to the master and replicas (the Sentinels are reached without a password).' },
  { key: 'redisSentinelName', flag: '--redis-sentinel-name', value: 'name', env: 'REDIS_SENTINEL_NAME', default: '(none)', description: 'Name of the master the Sentinels watch.' },
  { key: 'prefix', flag: '--prefix', value: 'prefix', env: 'LEASEHOLD_PREFIX', default: DEFAULT_PREFIX, description: 'Prefix of every Redis key.' },
  { key: 'port', flag: '--port', value: 'port', env: 'PORT', default: '3000', description: 'HTTP port of the status API; `0` picks a free port (the node logs it).' },
  { key: 'host', flag: '--host', value: 'address', env: 'HOST', default: '127.0.0.1', description: 'Address the HTTP server listens on: this machine only by default; `0.0.0.0` for every interface (the container image sets it).' },
  { key: 'trustProxy', flag: '--trust-proxy', value: 'value', env: 'LEASEHOLD_TRUST_PROXY', default: 'false', description: 'Whether the `X-Forwarded-*` headers of a reverse proxy are believed: `true`, the number of proxies in front, or their addresses (`10.0.0.1,10.0.0.0/8`). Then a request that reached the proxy over TLS gets a `Secure` read cookie, and failed token attempts are counted by the client\'s address, not the proxy\'s.' },
  { key: 'instanceId', flag: '--instance-id', value: 'id', env: 'LEASEHOLD_INSTANCE_ID', default: '<host>-<pid>', description: 'This node\'s id in the status and in lease values.' },
  { key: 'adminToken', flag: undefined, env: 'LEASEHOLD_ADMIN_TOKEN', default: '(none: admin routes refused)', description: 'Bearer token (at least 16 characters) of the admin routes: `POST /manage/jobs/:id/run`, `/pause`, `/resume`, `/cancel`, `DELETE /manage/jobs/:id`, and the MCP tools that change jobs.' },
  { key: 'readToken', flag: undefined, env: 'LEASEHOLD_READ_TOKEN', default: '(none: reads open)', description: 'Token of the reads: `GET /manage/*` (the status, the status page `/manage/ui` and its events) then need `Authorization: Bearer <token>` or the page\'s sign-in cookie. `/health/*` stays open.' },
  { key: 'metricsToken', flag: undefined, env: 'LEASEHOLD_METRICS_TOKEN', default: '(none: `/metrics` open)', description: 'Bearer token of `GET /metrics`, for Prometheus\'s `authorization` setting.' },
  { key: 'cookieSecret', flag: undefined, env: 'LEASEHOLD_COOKIE_SECRET', default: '(none: the read token)', description: 'Secret the status page\'s sign-in cookie is signed with (at least 16 characters). The cookie expires after 12 hours; changing this secret signs every browser out at once without changing the read token.' },
  { key: 'mcpAllowedOrigins', flag: '--mcp-allowed-origins', value: 'origin,...', env: 'LEASEHOLD_MCP_ALLOWED_ORIGINS', default: '(none: loopback origins only)', description: 'Browser origins (`https://tools.example.com`) allowed to call `POST /mcp`, beside `localhost`, `127.0.0.1` and `[::1]` on any port. A request with any other `Origin` header is refused (403), against DNS rebinding; a request without one (an agent, curl) is not concerned.' },
  { key: 'recentRuns', flag: '--recent-runs', value: 'n', env: 'LEASEHOLD_RECENT_RUNS', default: '50', description: 'How many recent runs each job keeps in Redis (1 to 1000), shown by `GET /manage/jobs/:id`.' },
  { key: 'metricsJobLimit', flag: '--metrics-job-limit', value: 'n', env: 'LEASEHOLD_METRICS_JOB_LIMIT', default: '1000', description: 'How many jobs have series of their own (`job="<id>"`) in this node\'s metrics (0 to 1000000), the first it registers; the runs of the others are counted in `job="(other)"`, so a scrape stays small however many jobs the node ran.' },
  { key: 'handoffDelay', flag: '--handoff-delay', value: 'duration', env: 'LEASEHOLD_HANDOFF_DELAY', default: '100ms', description: 'How long after an installation tick its backup node claims it when the first-ranked node has not (dead, stalled, or seeing other live nodes); on the tick once that node has let one pass, until it claims again.' },
  { key: 'eventsMaxClients', flag: '--events-max-clients', value: 'n', env: 'LEASEHOLD_EVENTS_MAX_CLIENTS', default: '100', description: 'How many status-page event streams (`GET /manage/events`) this node serves at once (1 to 100000); beyond, it answers 503. Whatever the cap, a client whose socket has taken nothing for 3 s is disconnected.' },
  { key: 'shutdownGrace', flag: '--shutdown-grace', value: 'duration', env: 'LEASEHOLD_SHUTDOWN_GRACE', default: '10s', description: 'How long shutdown waits for runs in progress before aborting them.' },
  { key: 'privateRedis', flag: '--private-redis', env: undefined, boolean: true, default: 'off', description: 'When no Redis is configured, start a private `redis-server` from the PATH on a free port (no persistence) and stop it when the node exits. `npm start` uses it.' },
  { key: 'local', flag: '--local', env: undefined, boolean: true, default: 'off', description: 'This node runs alone, without Redis: its installation jobs run on it only and nothing is shared (a second replica would run them again). Without it, a node with installation jobs and no Redis refuses to start.' },
  { key: 'logLevel', flag: '--log-level', value: 'level', env: 'LOG_LEVEL', default: 'info', description: 'pino level: fatal, error, warn, info, debug, trace or silent.' },
  { key: 'logFormat', flag: '--log-format', value: 'json|pretty', env: 'LOG_FORMAT', default: '`pretty` on a terminal, else `json`', description: '`json` (one JSON object a line, for log shippers) or `pretty` (readable lines for people).' },
];

/** A setting's name in errors: its variable and flag, `LEASEHOLD_PREFIX/--prefix`. */
export function settingName(key: keyof NodeConfig): string {
  const e = CONFIG.find((c) => c.key === key);
  return [e?.env, e?.flag].filter(Boolean).join('/');
}

/** A setting as `--help` shows it: its flag with its value, its variable, its default. */
export function helpOption(e: ConfigEntry, description: string = e.description): HelpOption {
  const flag = e.flag === undefined ? undefined : e.value === undefined ? e.flag : `${e.flag} <${e.value}>`;
  return e.default === '(required)' ? { flag, env: e.env, description: `${description} Required.` } : { flag, env: e.env, default: e.default, description };
}

/** The setting whose flag is `flag` (`--prefix`), for the commands that share some of them. */
export function settingByFlag(flag: string): ConfigEntry | undefined {
  return CONFIG.find((e) => e.flag === flag);
}

/** The Redis settings by the names `leasehold start` and `leasehold status` show in errors: the variables. */
export const REDIS_SETTINGS: RedisSourceNames = { url: 'REDIS_URL', clusterNodes: 'REDIS_CLUSTER_NODES', sentinels: 'REDIS_SENTINELS', sentinelName: 'REDIS_SENTINEL_NAME' };

/** `--trust-proxy` as fastify's `trustProxy` takes it: a boolean, a hop count, or addresses. */
function readTrustProxy(value: string | undefined, bad: (why: string) => never): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d{1,2}$/.test(value)) return Number(value);
  if (/^[0-9A-Fa-f:.]+(\/\d{1,3})?(\s*,\s*[0-9A-Fa-f:.]+(\/\d{1,3})?)*$/.test(value)) return value;
  return bad('is not true, false, a number of proxies or a list of their addresses');
}

/**
 * Reads the configuration from parsed flags and the environment (flags win).
 * @throws LeaseholdError naming the flag or variable at fault: `invalidConfig`, `invalidToken` or `invalidRedisTarget`.
 */
export function readConfig(flags: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): NodeConfig {
  const get = (e: ConfigEntry): string | undefined => {
    const fromFlag = e.flag ? flags[e.flag.slice(2)] : undefined;
    if (fromFlag !== undefined) return String(fromFlag);
    const v = e.env ? env[e.env] : undefined;
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const out: Record<string, string | undefined> = {};
  for (const e of CONFIG) out[e.key] = get(e);
  const bad = (key: keyof NodeConfig, why: string): never => {
    const value = out[key] ?? '';
    const shown = JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
    throw new LeaseholdError(ErrorCodes.invalidConfig, `${settingName(key)}: ${shown} ${why}`);
  };
  const portRaw = out['port'] ?? '3000';
  const trustProxy = readTrustProxy(out['trustProxy'], (why) => bad('trustProxy', why));
  if (!/^\d{1,5}$/.test(portRaw) || Number(portRaw) > 65535) bad('port', 'is not a port (0 to 65535)');
  if (out['prefix'] !== undefined) checkPrefix(out['prefix'], settingName('prefix'));
  if (out['instanceId'] !== undefined) checkInstanceId(out['instanceId'], settingName('instanceId'));
  // Never shown: they are secrets.
  for (const key of ['adminToken', 'readToken', 'metricsToken', 'cookieSecret'] as const) checkToken(out[key], settingName(key));
  if (out['handoffDelay'] !== undefined) {
    try {
      readDuration(out['handoffDelay'], 'hand-off delay', true);
    } catch {
      bad('handoffDelay', 'is not a duration (use milliseconds or a string like 50ms, 100ms, 1s)');
    }
  }
  if (out['shutdownGrace'] !== undefined) {
    try {
      readDuration(out['shutdownGrace'], 'shutdown grace', true);
    } catch {
      bad('shutdownGrace', 'is not a duration (use milliseconds or a string like 500ms, 10s, 1m)');
    }
  }
  // A whole number written plainly (no sign, no leading zero), so the value read is the one given.
  const wholeNumber = (key: 'recentRuns' | 'metricsJobLimit' | 'eventsMaxClients', min: number, max: number): number | undefined => {
    const raw = out[key];
    if (raw === undefined) return undefined;
    if (!/^(0|[1-9]\d{0,9})$/.test(raw) || Number(raw) < min || Number(raw) > max) bad(key, `is not a whole number from ${min} to ${max}`);
    return Number(raw);
  };
  const recentRuns = wholeNumber('recentRuns', 1, 1_000);
  const metricsJobLimit = wholeNumber('metricsJobLimit', 0, 1_000_000);
  const eventsMaxClients = wholeNumber('eventsMaxClients', 1, 100_000);
  // A REDIS_SENTINEL_NAME left in the environment without Sentinels is not used.
  checkRedisSource(
    { url: out['redisUrl'], clusterNodes: out['redisClusterNodes'], sentinels: out['redisSentinels'], sentinelName: out['redisSentinelName'] },
    REDIS_SETTINGS,
    'ignored',
  );
  return {
    jobs: out['jobs'],
    redisUrl: out['redisUrl'],
    redisClusterNodes: out['redisClusterNodes'],
    redisSentinels: out['redisSentinels'],
    redisSentinelName: out['redisSentinelName'],
    prefix: out['prefix'] ?? DEFAULT_PREFIX,
    port: Number(portRaw),
    host: out['host'] ?? '127.0.0.1',
    instanceId: out['instanceId'],
    adminToken: out['adminToken'],
    readToken: out['readToken'],
    metricsToken: out['metricsToken'],
    cookieSecret: out['cookieSecret'],
    trustProxy,
    mcpAllowedOrigins: out['mcpAllowedOrigins'],
    shutdownGrace: out['shutdownGrace'] ?? '10s',
    logLevel: out['logLevel'] ?? 'info',
    logFormat: out['logFormat'],
    recentRuns,
    metricsJobLimit,
    handoffDelay: out['handoffDelay'],
    eventsMaxClients,
    privateRedis: out['privateRedis'] === 'true',
    local: out['local'] === 'true',
  };
}

/** The README's configuration table, rendered from {@link CONFIG}. */
export function renderConfigTable(): string {
  const cell = (s: string | undefined) => (s === undefined ? '' : s.includes('`') || s.startsWith('(') ? s : `\`${s}\``);
  const rows = CONFIG.map((e) => `| ${cell(e.flag) || '—'} | ${cell(e.env) || '—'} | ${cell(e.default)} | ${e.description} |`);
  for (const e of EXECUTOR_ENV_DOCS) rows.push(`| — | \`${e.env}\` | ${e.default} | ${e.description} |`);
  return ['| flag | environment | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}
