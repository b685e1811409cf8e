/**
 * The Kubernetes manifests in infra/k8s (SPEC 7), checked by parsing: three replicas,
 * probes on /health that ride out a Redis blip, a termination grace above the shutdown
 * grace, the admin token from a Secret, a Service and a PodDisruptionBudget that select
 * the pods.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { CONFIG } from '../src/cli/config.js';
import { readDuration } from '../src/schedule/duration.js';
import { isObj, obj, type Obj, list } from './helpers/infra.js';

const DIR = fileURLToPath(new URL('../infra/k8s/', import.meta.url));


interface Manifest {
  readonly file: string;
  readonly kind: string;
  readonly name: string;
  readonly doc: Obj;
}

const files = readdirSync(DIR).filter((f) => /\.ya?ml$/.test(f));
const manifests: Manifest[] = files.flatMap((file) =>
  parseAllDocuments(readFileSync(`${DIR}${file}`, 'utf8')).flatMap((d) => {
    assert.deepEqual(d.errors, [], `${file} is valid YAML`);
    const doc = d.toJS() as unknown;
    if (doc == null) return [];
    const o = obj(doc, file);
    return [{ file, kind: String(o['kind']), name: String(obj(o['metadata'] ?? {}, `${file} metadata`)['name']), doc: o }];
  }),
);
const resources = manifests.filter((m) => m.kind !== 'Kustomization');
const one = (kind: string): Manifest => {
  const found = resources.filter((m) => m.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0] as Manifest;
};

const deployment = one('Deployment').doc;
const spec = obj(deployment['spec'], 'Deployment spec');
const template = obj(spec['template'], 'pod template');
const podMeta = obj(template['metadata'], 'pod metadata');
const podLabels = obj(podMeta['labels'], 'pod labels');
const podSpec = obj(template['spec'], 'pod spec');
const containers = list(podSpec['containers'], 'containers');
const container = containers[0] as Obj;
const env = list(container['env'], 'env');
const envVar = (name: string): Obj | undefined => env.find((e) => e['name'] === name);
const ports = list(container['ports'], 'container ports');

/** The container port a probe or Service port refers to, by name or number. */
function portNumber(ref: unknown): number {
  if (typeof ref === 'number') return ref;
  const named = ports.find((p) => p['name'] === ref);
  assert.ok(named, `port ${String(ref)} is a named container port`);
  return Number(named['containerPort']);
}
const selects = (selector: Obj): boolean => Object.entries(selector).every(([k, v]) => podLabels[k] === v);
const statusPort = Number((envVar('PORT')?.['value'] as string | undefined) ?? CONFIG.find((e) => e.env === 'PORT')?.default);

describe('infra/k8s', () => {
  it('has well-formed resources: apiVersion, kind and name', () => {
    for (const m of resources) {
      assert.ok(typeof m.doc['apiVersion'] === 'string', `${m.file}: apiVersion`);
      assert.match(m.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, `${m.file}: metadata.name`);
    }
    for (const kind of ['Deployment', 'Service', 'PodDisruptionBudget', 'Secret']) one(kind);
    assert.equal(one('PodDisruptionBudget').doc['apiVersion'], 'policy/v1');
  });

  it('applies with kustomize, every file but the example Secret', () => {
    const kustomization = obj(parseYaml(readFileSync(`${DIR}kustomization.yaml`, 'utf8')), 'kustomization');
    const listed = (kustomization['resources'] as string[]).slice().sort();
    const expected = [...new Set(resources.filter((m) => m.kind !== 'Secret').map((m) => m.file))].sort();
    assert.deepEqual(listed, expected);
  });
});

describe('infra/k8s Deployment', () => {
  it('runs three replicas of the pods it selects', () => {
    assert.equal(spec['replicas'], 3);
    assert.ok(selects(obj(obj(spec['selector'], 'selector')['matchLabels'], 'matchLabels')));
    assert.equal(containers.length, 1);
  });

  it('listens on the status port and probes readiness on /health/ready, liveness and startup on /health/live', () => {
    assert.equal(portNumber('http'), statusPort);
    const expected: Record<string, string> = { readinessProbe: '/health/ready', livenessProbe: '/health/live', startupProbe: '/health/live' };
    for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
      const get = obj(obj(container[probe], probe)['httpGet'], `${probe}.httpGet`);
      assert.equal(get['path'], expected[probe], probe);
      assert.equal(portNumber(get['port']), statusPort, `${probe} port`);
    }
  });

  it('takes a node out of the Service quickly but restarts it only after a Redis blip has had time to pass', () => {
    // /health answers 503 while Redis is away; a restart does not bring Redis back.
    const window = (name: string): number => {
      const p = obj(container[name], name);
      return Number(p['periodSeconds'] ?? 10) * Number(p['failureThreshold'] ?? 3);
    };
    assert.ok(window('readinessProbe') <= 15, `readiness gives up after ${window('readinessProbe')} s`);
    assert.ok(window('livenessProbe') >= 120, `liveness waits ${window('livenessProbe')} s before a restart`);
    const liveness = obj(container['livenessProbe'], 'livenessProbe');
    assert.ok(Number(liveness['timeoutSeconds'] ?? 1) < Number(liveness['periodSeconds'] ?? 10));
  });

  it('waits longer than the shutdown grace before killing a pod', () => {
    const grace = readDuration(
      (envVar('LEASEHOLD_SHUTDOWN_GRACE')?.['value'] as string | undefined) ?? CONFIG.find((e) => e.env === 'LEASEHOLD_SHUTDOWN_GRACE')?.default,
      'LEASEHOLD_SHUTDOWN_GRACE',
    );
    const termination = Number(podSpec['terminationGracePeriodSeconds']) * 1000;
    assert.ok(termination >= grace + 5_000, `terminationGracePeriodSeconds ${termination / 1000} s leaves time after the ${grace} ms grace`);
  });

  it('sets only settings leasehold start reads; the token and the Redis URL come from the Secret, the instance id from the pod name', () => {
    const known = new Set(CONFIG.flatMap((e) => (e.env ? [e.env] : [])));
    for (const e of env) assert.ok(known.has(String(e['name'])), `${String(e['name'])} is a setting of leasehold start`);
    const secret = one('Secret').doc;
    const secretKeys = new Set([...Object.keys(obj(secret['stringData'] ?? {}, 'stringData')), ...Object.keys(obj(secret['data'] ?? {}, 'data'))]);
    for (const name of ['LEASEHOLD_ADMIN_TOKEN', 'REDIS_URL']) {
      const ref = obj(obj(envVar(name)?.['valueFrom'], `${name}.valueFrom`)['secretKeyRef'], `${name} secretKeyRef`);
      assert.equal(ref['name'], one('Secret').name, `${name} from the Secret`);
      assert.ok(secretKeys.has(String(ref['key'])), `the Secret has ${String(ref['key'])}`);
      assert.equal(envVar(name)?.['value'], undefined, `${name} has no literal value`);
    }
    const field = obj(obj(envVar('LEASEHOLD_INSTANCE_ID')?.['valueFrom'], 'LEASEHOLD_INSTANCE_ID.valueFrom')['fieldRef'], 'fieldRef');
    assert.equal(field['fieldPath'], 'metadata.name');
  });

  it('runs as non-root with a read-only root filesystem and a writable /tmp', () => {
    const pod = obj(podSpec['securityContext'] ?? {}, 'pod securityContext');
    const own = obj(container['securityContext'] ?? {}, 'container securityContext');
    const setting = (key: string): unknown => own[key] ?? pod[key];
    assert.equal(setting('runAsNonRoot'), true);
    assert.notEqual(setting('runAsUser'), 0);
    assert.equal(own['allowPrivilegeEscalation'], false);
    assert.equal(own['readOnlyRootFilesystem'], true);
    const mount = list(container['volumeMounts'] ?? [], 'volumeMounts').find((m) => m['mountPath'] === '/tmp');
    assert.ok(mount, 'tsx caches compiled job modules in /tmp');
    const volume = list(podSpec['volumes'] ?? [], 'volumes').find((v) => v['name'] === mount['name']);
    assert.ok(volume && isObj(volume['emptyDir']), '/tmp is an emptyDir');
  });

  it('requests and limits CPU and memory', () => {
    const resources = obj(container['resources'], 'resources');
    for (const kind of ['requests', 'limits']) {
      const r = obj(resources[kind], kind);
      assert.ok(r['cpu'] !== undefined && r['memory'] !== undefined, `${kind}: cpu and memory`);
    }
  });

  it('asks a Prometheus that discovers pods by annotation to scrape /metrics on the status port', () => {
    const annotations = obj(podMeta['annotations'], 'pod annotations');
    assert.equal(annotations['prometheus.io/scrape'], 'true');
    assert.equal(Number(annotations['prometheus.io/port']), statusPort);
    assert.equal(annotations['prometheus.io/path'], '/metrics');
  });
});

describe('infra/k8s Service and PodDisruptionBudget', () => {
  it('the Service selects the pods and targets the status port', () => {
    const s = obj(one('Service').doc['spec'], 'Service spec');
    assert.ok(selects(obj(s['selector'], 'Service selector')));
    const p = list(s['ports'], 'Service ports');
    assert.equal(p.length, 1);
    assert.equal(portNumber(p[0]?.['targetPort']), statusPort);
  });

  it('the budget selects the pods, allows a drain and keeps at least two running', () => {
    const s = obj(one('PodDisruptionBudget').doc['spec'], 'PDB spec');
    assert.ok(selects(obj(obj(s['selector'], 'PDB selector')['matchLabels'], 'PDB matchLabels')));
    const replicas = Number(spec['replicas']);
    const minAvailable = s['minAvailable'] !== undefined ? Number(s['minAvailable']) : replicas - Number(s['maxUnavailable']);
    assert.ok(Number.isInteger(minAvailable), 'an absolute number, not a percentage');
    assert.ok(minAvailable >= 2, `keeps ${minAvailable} pods`);
    assert.ok(minAvailable < replicas, 'one pod at a time can be evicted');
  });
});
