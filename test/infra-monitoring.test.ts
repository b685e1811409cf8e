/**
 * Monitoring in infra/ (SPEC 7): the Prometheus configuration of the compose cluster, the
 * alert rules and the Grafana dashboard. Every metric a rule or a panel names must exist:
 * in the list below, in src/metrics/, or among prom-client's default metrics.
 * With promtool on PATH, the configuration is also checked and the rules' unit tests run
 * (without it the test skips, or fails under CI).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { parse as parseYaml } from 'yaml';
import { RunOutcomes, SkipReasons } from '../src/runner/events.js';
import { ROOT, read, exists, isObj, obj, list } from './helpers/infra.js';
import { haveTool } from './helpers/tools.js';



// ---- the metrics that exist ------------------------------------------------------------

type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary';

/**
 * Every leasehold metric the rules and the dashboard may use, with its type. The gauges
 * at the end are due in src/metrics/prom.ts; once the runner's registry has them all,
 * this list can be replaced by that registry's names.
 */
const LEASEHOLD_METRICS: Readonly<Record<string, MetricType>> = {
  leasehold_job_runs_total: 'counter',
  leasehold_job_run_duration_seconds: 'histogram',
  leasehold_job_skips_total: 'counter',
  leasehold_job_missed_total: 'counter',
  leasehold_job_start_lag_seconds: 'histogram',
  leasehold_lease_lost_total: 'counter',
  leasehold_job_last_success_timestamp_seconds: 'gauge',
  leasehold_job_interval_seconds: 'gauge',
  leasehold_job_invalid_schedule: 'gauge',
  leasehold_job_failing_streak: 'gauge',
  leasehold_job_success_deadline_timestamp_seconds: 'gauge',
  leasehold_clock_steps_total: 'counter',
};
/** Series Prometheus writes itself for every target. */
const SCRAPE_SERIES: Readonly<Record<string, MetricType>> = { up: 'gauge' };

/** Names (and, where the constructor shows it, types) of the metrics defined in a source file. */
function metricsInSource(text: string): Map<string, MetricType | undefined> {
  const found = new Map<string, MetricType | undefined>();
  for (const m of text.matchAll(/['"`](leasehold_[a-z0-9_]+)['"`]/g)) found.set(m[1] ?? '', undefined);
  for (const m of text.matchAll(/new\s+(Counter|Gauge|Histogram|Summary)\s*(?:<[^>]*>)?\s*\(\s*\{\s*name:\s*['"`]([a-zA-Z_:][\w:]*)['"`]/g)) {
    found.set(m[2] ?? '', (m[1] ?? '').toLowerCase() as MetricType);
  }
  return found;
}
/** Where the metrics are defined: every source file of src/metrics/. */
const PROM_SOURCE = 'src/metrics/';
const fromSource = new Map<string, MetricType | undefined>(
  exists(PROM_SOURCE) ? readdirSync(join(ROOT, PROM_SOURCE)).filter((f) => f.endsWith('.ts')).flatMap((f) => [...metricsInSource(read(`${PROM_SOURCE}${f}`))]) : [],
);

async function defaultMetrics(): Promise<Map<string, MetricType>> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = await registry.getMetricsAsJSON();
  return new Map(metrics.map((m) => [m.name, String(m.type) as MetricType]));
}

/** Every metric name that exists, with its type when known. */
async function knownMetrics(): Promise<Map<string, MetricType | undefined>> {
  const known = new Map<string, MetricType | undefined>([...Object.entries(LEASEHOLD_METRICS), ...Object.entries(SCRAPE_SERIES)]);
  for (const [name, type] of fromSource) known.set(name, type ?? known.get(name));
  for (const [name, type] of await defaultMetrics()) known.set(name, type);
  return known;
}

/** Whether a series name exists: a metric, or a histogram's _bucket/_sum/_count (a summary's _sum/_count). */
function exists_(known: Map<string, MetricType | undefined>, series: string): boolean {
  if (known.has(series)) return true;
  const m = /^(.+)_(bucket|sum|count)$/.exec(series);
  if (!m) return false;
  const type = known.get(m[1] ?? '');
  return type === 'histogram' || (type === 'summary' && m[2] !== 'bucket');
}

const PROMQL_WORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'inf', 'nan']);

/** Metric names a PromQL expression selects (Grafana variables allowed). */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names = [...bare.matchAll(/(?<![\w.:])[a-zA-Z_:][\w:]*(?![\w:]|\s*\()/g)].map((m) => m[0]);
  return [...new Set(names.filter((n) => !PROMQL_WORDS.has(n.toLowerCase())))];
}

/** Values an expression matches a label against (alternatives of a regex split out). */
function labelValues(expr: string, label: string): string[] {
  const out: string[] = [];
  for (const m of expr.matchAll(new RegExp(`\\b${label}\\s*(=~|!~|!=|=)\\s*"([^"]*)"`, 'g'))) {
    const value = m[2] ?? '';
    out.push(...((m[1] ?? '').includes('~') ? value.split('|') : [value]));
  }
  return out;
}
const LABEL_VALUES: Record<string, readonly string[]> = { outcome: Object.values(RunOutcomes), reason: Object.values(SkipReasons) };

/** Asserts that every metric and every outcome/reason value an expression names exists. */
function assertExpression(known: Map<string, MetricType | undefined>, expr: string, where: string): string[] {
  const names = metricNames(expr);
  assert.ok(names.length > 0, `${where}: selects a metric`);
  for (const n of names) assert.ok(exists_(known, n), `${where}: no metric ${n} in the list, ${PROM_SOURCE} or the default metrics`);
  for (const [label, allowed] of Object.entries(LABEL_VALUES)) {
    for (const v of labelValues(expr, label)) assert.ok(allowed.includes(v), `${where}: ${label} "${v}" is one of ${allowed.join(', ')}`);
  }
  return names;
}

describe('metric names in expressions', () => {
  it('finds the selected metrics and nothing else', () => {
    assert.deepEqual(
      metricNames('sum by (job, le) (rate(foo_bucket{outcome=~"a|b", x="y z"}[5m])) / on(job) group_left bar offset 5m > 1e3 and time() - baz:rate5m unless absent(up{job="x"} == 1)'),
      ['foo_bucket', 'bar', 'baz:rate5m', 'up'],
    );
    assert.deepEqual(metricNames('histogram_quantile(0.99, sum by (le) (rate(lag_bucket{job=~"$job"}[$__rate_interval])))'), ['lag_bucket']);
    assert.deepEqual(metricNames('vector(0)'), []);
  });

  it('resolves histogram series and rejects unknown names', async () => {
    const known = await knownMetrics();
    assert.ok(exists_(known, 'leasehold_job_run_duration_seconds_bucket'));
    assert.ok(exists_(known, 'nodejs_eventloop_lag_p99_seconds'));
    assert.ok(!exists_(known, 'leasehold_job_runs_total_bucket'), 'a counter has no buckets');
    assert.ok(!exists_(known, 'leasehold_job_failures_total'));
    assert.throws(() => assertExpression(known, 'rate(leasehold_job_runs_total{outcome="vanished"}[5m])', 'x'), /outcome "vanished"/);
  });

  it('agrees with src/metrics/ on the names and types both define', async (t: TestContext) => {
    if (fromSource.size === 0) {
      t.skip(`${PROM_SOURCE} defines no leasehold metric yet`);
      return;
    }
    for (const [name, type] of fromSource) {
      assert.match(name, /^leasehold_/);
      const listed = LEASEHOLD_METRICS[name];
      if (listed && type) assert.equal(type, listed, `${name} is a ${type} in ${PROM_SOURCE}`);
    }
    const pending = Object.keys(LEASEHOLD_METRICS).filter((n) => !fromSource.has(n));
    if (pending.length > 0) t.diagnostic(`not yet in ${PROM_SOURCE}: ${pending.join(', ')}`);
  });
});

// ---- Prometheus ------------------------------------------------------------------------

const compose = obj(parseYaml(read('docker-compose.yml')), 'docker-compose.yml');
const services = obj(compose['services'], 'services');
const nodeEnv = obj(obj(services['node'], 'node service')['environment'], 'node environment');
const prometheus = obj(parseYaml(read('infra/prometheus/prometheus.yml')), 'prometheus.yml');
const scrapeJobs = list(prometheus['scrape_configs'], 'scrape_configs');
const leaseholdJob = scrapeJobs.find((j) => j['job_name'] === 'leasehold');
const rulesFile = 'infra/prometheus/alerts.yml';
const groups = list(obj(parseYaml(read(rulesFile)), 'alerts.yml')['groups'], 'groups');
const rules = groups.flatMap((g) => list(g['rules'], `rules of ${String(g['name'])}`));
const alerts = rules.filter((r) => typeof r['alert'] === 'string');

/** Seconds of a Prometheus duration: `30s`, `5m`, `1h30m`. */
function promDuration(text: unknown): number {
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
  const s = String(text);
  const parts = [...s.matchAll(/(\d+)(ms|s|m|h|d|w|y)/g)];
  assert.ok(parts.length > 0 && parts.map((p) => p[0]).join('') === s, `${JSON.stringify(text)} is a Prometheus duration`);
  return parts.reduce((sum, p) => sum + Number(p[1]) * (units[p[2] ?? ''] ?? NaN), 0);
}

describe('infra/prometheus/prometheus.yml', () => {
  it('loads the alert rules', () => {
    const files = (prometheus['rule_files'] as string[]).map((f) => (f.startsWith('/') ? f : `infra/prometheus/${f}`));
    assert.deepEqual(files, [rulesFile]);
  });

  it('scrapes /metrics on the status port of every replica of the compose node service', () => {
    assert.ok(leaseholdJob, 'a scrape job named leasehold');
    assert.equal(leaseholdJob['metrics_path'] ?? '/metrics', '/metrics');
    const dns = list(leaseholdJob['dns_sd_configs'], 'dns_sd_configs');
    assert.equal(dns.length, 1);
    assert.ok((dns[0]?.['names'] as string[]).includes('node'), 'the compose service name, which resolves to every replica');
    assert.equal(dns[0]?.['type'], 'A');
    assert.equal(String(dns[0]?.['port']), String(nodeEnv['PORT'] ?? '3000'));
    assert.ok(isObj(services['node']));
  });

  it('keeps the metrics\' own job label, the leasehold job id', () => {
    assert.equal(leaseholdJob?.['honor_labels'], true);
  });
});

describe('infra/prometheus/alerts.yml', () => {
  it('gives every alert a name, a for, a severity, a summary and a description', () => {
    assert.equal(alerts.length, rules.length, 'alerting rules only');
    const names = alerts.map((a) => String(a['alert']));
    assert.equal(new Set(names).size, names.length, 'names are unique');
    for (const a of alerts) {
      const name = String(a['alert']);
      assert.match(name, /^Leasehold[A-Z]\w+$/);
      assert.ok(typeof a['expr'] === 'string' && a['expr'].trim() !== '', `${name}: expr`);
      assert.ok(a['for'] !== undefined && promDuration(a['for']) > 0, `${name}: for`);
      assert.ok(['critical', 'warning', 'info'].includes(String(obj(a['labels'], `${name} labels`)['severity'])), `${name}: severity`);
      const annotations = obj(a['annotations'], `${name} annotations`);
      for (const key of ['summary', 'description']) assert.ok(typeof annotations[key] === 'string' && annotations[key] !== '', `${name}: ${key}`);
    }
  });

  it('names only metrics and label values that exist', async () => {
    const known = await knownMetrics();
    for (const a of alerts) assertExpression(known, String(a['expr']), String(a['alert']));
  });

  it('covers a failing job, lost leases, missed ticks, no recent success, invalid schedules and a node down', () => {
    const using = (pred: (expr: string) => boolean): string[] => alerts.filter((a) => pred(String(a['expr']))).map((a) => String(a['alert']));
    const has = (expr: string, metric: string): boolean => metricNames(expr).includes(metric);
    const cases: [string, (expr: string) => boolean][] = [
      ['failing streak', (e) => has(e, 'leasehold_job_failing_streak')],
      ['failed runs', (e) => has(e, 'leasehold_job_runs_total') && labelValues(e, 'outcome').includes('failed')],
      ['lost leases', (e) => has(e, 'leasehold_lease_lost_total')],
      ['missed ticks', (e) => has(e, 'leasehold_job_missed_total')],
      ['no success for three scheduled fires', (e) => has(e, 'leasehold_job_success_deadline_timestamp_seconds')],
      ['invalid schedule', (e) => has(e, 'leasehold_job_invalid_schedule')],
      ['a node down', (e) => has(e, 'up') && /==\s*0/.test(e)],
    ];
    for (const [what, pred] of cases) assert.ok(using(pred).length > 0, `an alert for ${what}`);
  });

  it('selects up of the scrape job that exists', () => {
    const jobs = new Set(scrapeJobs.map((j) => String(j['job_name'])));
    const selected = alerts.flatMap((a) => [...String(a['expr']).matchAll(/\bup\{([^}]*)\}/g)].map((m) => /job\s*=\s*"([^"]*)"/.exec(m[1] ?? '')?.[1]));
    assert.ok(selected.length > 0);
    for (const job of selected) assert.ok(job && jobs.has(job), `up{job="${String(job)}"} is a scrape job`);
  });

  it('has a promtool unit test for every alert', () => {
    const tests = obj(parseYaml(read('infra/prometheus/alerts.test.yml')), 'alerts.test.yml');
    assert.deepEqual(tests['rule_files'], ['alerts.yml']);
    const tested = new Set(list(tests['tests'], 'tests').flatMap((t) => list(t['alert_rule_test'] ?? [], 'alert_rule_test').map((a) => String(a['alertname']))));
    for (const a of alerts) assert.ok(tested.has(String(a['alert'])), `${String(a['alert'])} is tested`);
  });
});

describe('promtool', () => {
  const promtool = (args: string[]): Promise<{ code: number; out: string }> =>
    new Promise((resolve) => {
      execFile('promtool', args, { cwd: `${ROOT}/infra/prometheus`, timeout: 60_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, out: `${stdout}${stderr}` });
      });
    });
  const available = (): Promise<boolean> => promtool(['--version']).then((r) => r.code === 0);

  it('accepts the configuration and the rules, and the rules pass their unit tests', async (t: TestContext) => {
    if (!haveTool(t, await available(), 'promtool is not on PATH (Debian package prometheus; .ci/run installs it)')) return;
    const config = await promtool(['check', 'config', 'prometheus.yml']);
    assert.equal(config.code, 0, config.out);
    const tests = await promtool(['test', 'rules', 'alerts.test.yml']);
    assert.equal(tests.code, 0, tests.out);
  });
});

// ---- Grafana ---------------------------------------------------------------------------

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type?: string; uid?: string };
  targets?: { expr?: string; datasource?: { uid?: string } }[];
}

describe('infra/grafana/leasehold-dashboard.json', () => {
  const dashboard = obj(JSON.parse(read('infra/grafana/leasehold-dashboard.json')), 'dashboard');
  const panels = dashboard['panels'] as Panel[];
  const graphs = panels.filter((p) => p.type !== 'row');
  const exprs = graphs.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr ?? '' })));
  const variables = list(obj(dashboard['templating'], 'templating')['list'], 'templating.list');

  it('is a dashboard with a stable uid and panels', () => {
    assert.equal(dashboard['uid'], 'leasehold');
    assert.ok(typeof dashboard['title'] === 'string');
    assert.ok(Number.isInteger(dashboard['schemaVersion']));
    assert.ok(graphs.length >= 8, `${graphs.length} panels`);
    for (const p of graphs) assert.ok((p.targets ?? []).length > 0 && (p.targets ?? []).every((t) => t.expr), `${p.title}: queries`);
  });

  it('queries only metrics and label values that exist', async () => {
    const known = await knownMetrics();
    for (const { panel, expr } of exprs) assertExpression(known, expr, panel);
  });

  it('shows runs by outcome, duration p50 and p99, start lag p99, skips by reason, missed ticks, leases lost and event loop lag', () => {
    const any = (pred: (e: string) => boolean): boolean => exprs.some(({ expr }) => pred(expr));
    const uses = (e: string, metric: string): boolean => metricNames(e).includes(metric);
    const quantile = (e: string, q: string, metric: string): boolean => new RegExp(`histogram_quantile\\(\\s*${q.replace('.', '\\.')}\\s*,`).test(e) && uses(e, metric);
    assert.ok(any((e) => uses(e, 'leasehold_job_runs_total') && /by \([^)]*\boutcome\b/.test(e)), 'runs by outcome');
    assert.ok(any((e) => quantile(e, '0.5', 'leasehold_job_run_duration_seconds_bucket')), 'duration p50');
    assert.ok(any((e) => quantile(e, '0.99', 'leasehold_job_run_duration_seconds_bucket')), 'duration p99');
    assert.ok(any((e) => quantile(e, '0.99', 'leasehold_job_start_lag_seconds_bucket')), 'start lag p99');
    assert.ok(any((e) => uses(e, 'leasehold_job_skips_total') && /by \([^)]*\breason\b/.test(e)), 'skips by reason');
    assert.ok(any((e) => uses(e, 'leasehold_job_missed_total')), 'missed ticks');
    assert.ok(any((e) => uses(e, 'leasehold_lease_lost_total')), 'leases lost');
    assert.ok(any((e) => metricNames(e).some((n) => n.startsWith('nodejs_eventloop_lag'))), 'event loop lag');
  });

  it('uses a data source variable and defines every variable it uses', () => {
    const names = new Set(variables.map((v) => String(v['name'])));
    const ds = variables.find((v) => v['name'] === 'datasource');
    assert.equal(ds?.['type'], 'datasource');
    assert.equal(ds?.['query'], 'prometheus');
    for (const p of graphs) {
      assert.equal(p.datasource?.uid, '${datasource}', `${p.title}: data source`);
      for (const t of p.targets ?? []) assert.equal(t.datasource?.uid, '${datasource}', `${p.title}: query data source`);
    }
    const builtIn = new Set(['__rate_interval', '__range', '__interval']);
    for (const { panel, expr } of exprs) {
      for (const m of expr.matchAll(/\$\{?(\w+)\}?/g)) assert.ok(builtIn.has(m[1] ?? '') || names.has(m[1] ?? ''), `${panel}: $${m[1]} is defined`);
    }
  });

  it('lays panels out on the 24-column grid without overlaps, with unique ids', () => {
    const ids = panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length);
    for (const p of panels) assert.ok(p.gridPos.x >= 0 && p.gridPos.w > 0 && p.gridPos.x + p.gridPos.w <= 24, `${p.title} fits`);
    for (const [i, a] of panels.entries()) {
      for (const b of panels.slice(i + 1)) {
        const apart =
          a.gridPos.x + a.gridPos.w <= b.gridPos.x || b.gridPos.x + b.gridPos.w <= a.gridPos.x || a.gridPos.y + a.gridPos.h <= b.gridPos.y || b.gridPos.y + b.gridPos.h <= a.gridPos.y;
        assert.ok(apart, `${a.title} and ${b.title} do not overlap`);
      }
    }
  });

  it('is provisioned by the compose grafana profile against the compose Prometheus', () => {
    const grafana = obj(services['grafana'], 'grafana service');
    assert.deepEqual(grafana['profiles'], ['grafana']);
    const mounts = (grafana['volumes'] as string[]).map((v) => v.split(':'));
    const dash = mounts.find(([host]) => host === './infra/grafana/leasehold-dashboard.json');
    assert.ok(dash, 'the dashboard is mounted');
    const providers = list(obj(parseYaml(read('infra/grafana/provisioning/dashboards/leasehold.yml')), 'providers')['providers'], 'providers');
    assert.ok(dash[1]?.startsWith(`${String(obj(providers[0]?.['options'], 'options')['path'])}/`), 'into the folder the provider reads');
    assert.ok(mounts.some(([host, inside]) => host === './infra/grafana/provisioning' && inside === '/etc/grafana/provisioning'));
    const sources = list(obj(parseYaml(read('infra/grafana/provisioning/datasources/prometheus.yml')), 'datasources')['datasources'], 'datasources');
    assert.equal(sources[0]?.['type'], 'prometheus');
    const url = new URL(String(sources[0]?.['url']));
    assert.ok(isObj(services[url.hostname]), `${url.hostname} is a compose service`);
    assert.ok((obj(services[url.hostname], 'prometheus')['ports'] as string[]).some((p) => p.endsWith(`:${url.port}`)));
  });
});
