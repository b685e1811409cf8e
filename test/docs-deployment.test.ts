/**
 * The deployment page (docs/guide/deployment.md) stays true to the kit it describes (SPEC 7): the admin token
 * its curl commands send is the one the compose cluster runs with, the image the Kubernetes
 * manifests run is built and loaded by the commands it shows, the image's health check is on the
 * path the check requests, and it says which parts of the kit the tests run and which they only
 * parse.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { exists, obj, read } from './helpers/infra.js';

const section = read('docs/guide/deployment.md');
/** The lines of the section's shell blocks, continuations joined, comments dropped. */
const shellLines = [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
  .flatMap((m) => (m[1] ?? '').replace(/\\\n\s*/g, ' ').split('\n'))
  .map((l) => l.replace(/(^|\s)#.*$/, '').trim())
  .filter((l) => l !== '');

describe('docs: Operations and deployment', () => {
  it('sets the admin token the compose cluster needs before it starts it, and sends that token', () => {
    const services = obj(obj(parseYaml(read('docker-compose.yml')), 'docker-compose.yml')['services'], 'services');
    const env = obj(obj(services['node'], 'node service')['environment'], 'node environment');
    assert.match(String(env['LEASEHOLD_ADMIN_TOKEN']), /^\$\{LEASEHOLD_ADMIN_TOKEN:\?[^}]+\}$/, 'the compose file has no default token');
    let token: string | undefined;
    let curls = 0;
    for (const line of shellLines) {
      const set = /^(?:export\s+)?LEASEHOLD_ADMIN_TOKEN=(\S+)/.exec(line);
      if (set) token = set[1];
      if (/\bdocker compose\b.*\bup\b/.test(line)) assert.ok(token !== undefined || /^LEASEHOLD_ADMIN_TOKEN=/.test(line), `${line}: no admin token is set yet`);
      const bearer = /^curl\b.*Authorization: Bearer ([^'"\s]+)/.exec(line);
      if (bearer) {
        curls++;
        assert.equal(bearer[1], '$LEASEHOLD_ADMIN_TOKEN', `${line}: sends the token the cluster runs with`);
      }
    }
    assert.match(token ?? '', /openssl/, 'the token is a random one');
    assert.ok(curls > 0, 'the section shows an admin call');
  });

  it('builds and loads the image the Kubernetes manifests run', () => {
    const images = parseAllDocuments(read('infra/k8s/deployment.yaml'))
      .map((d) => d.toJS() as unknown)
      .flatMap((doc) => {
        const spec = obj(obj(obj(obj(doc, 'deployment')['spec'], 'spec')['template'], 'template')['spec'], 'pod spec');
        return (spec['containers'] as Array<{ image: string }>).map((c) => c.image);
      });
    assert.ok(images.length > 0);
    for (const image of images) {
      assert.ok(shellLines.includes(`docker build -f infra/Dockerfile -t ${image} .`), `the section builds ${image}`);
      assert.ok(shellLines.some((l) => l === `kind load docker-image ${image}` || l === `minikube image load ${image}`), `the section loads ${image} into a cluster`);
    }
  });

  it('names the path the image\'s health check requests', () => {
    const path = /path:\s*'([^']+)'/.exec(read('infra/healthcheck.mjs'))?.[1];
    assert.ok(path, 'infra/healthcheck.mjs requests a path');
    assert.equal(/`HEALTHCHECK` on `([^`]+)`/.exec(section)?.[1], path);
  });

  it('says which parts of the kit run in the tests and which are parsed only', () => {
    const linked = [...section.matchAll(/\]\(\.\.\/\.\.\/(test\/[^)]+\.test\.ts)\)/g)].map((m) => m[1] ?? '');
    assert.ok(linked.includes('test/deploy-kit.test.ts'), 'the test that runs the kit');
    for (const file of linked) assert.ok(exists(file), `${file} exists`);
    const paragraph = section.slice(section.indexOf('test/deploy-kit.test.ts'));
    for (const part of ['nginx.conf', 'prometheus.yml', 'alerts.yml']) assert.ok(paragraph.includes(part), `${part} runs`);
    assert.match(paragraph, /Dockerfile.*docker-compose\.yml.*Kubernetes manifests[^.]*parsed/s, 'the rest is parsed only');
  });
});
