/**
 * The README's Deployment section stays true to the kit it describes (SPEC 7): the admin token
 * its curl commands send is the one the compose cluster runs with, the image the Kubernetes
 * manifests run is built and loaded by the commands it shows, the image's health check is on the
 * path the check requests, and it says which parts of the kit the tests run and which they only
 * parse.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { exists, obj, read } from './helpers/infra.js';

const readme = read('README.md');
const start = readme.indexOf('\n## Deployment\n');
assert.ok(start >= 0, 'the README has a Deployment section');
const end = readme.indexOf('\n## ', start + 1);
const section = readme.slice(start, end < 0 ? undefined : end);
/** The lines of the section's shell blocks, continuations joined, comments dropped. */
const shellLines = [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
  .flatMap((m) => (m[1] ?? '').replace(/\\\n\s*/g, ' ').split('\n'))
  .map((l) => l.replace(/(^|\s)#.*$/, '').trim())
  .filter((l) => l !== '');

describe('README: Deployment', () => {
  it('sends the admin token the compose cluster runs with: its default, or the one set on docker compose up', () => {
    const services = obj(obj(parseYaml(read('docker-compose.yml')), 'docker-compose.yml')['services'], 'services');
    const env = obj(obj(services['node'], 'node service')['environment'], 'node environment');
    const fallback = /^\$\{LEASEHOLD_ADMIN_TOKEN:-([^}]+)\}$/.exec(String(env['LEASEHOLD_ADMIN_TOKEN']))?.[1];
    assert.ok(fallback, 'the compose file gives the node LEASEHOLD_ADMIN_TOKEN with a default');
    let token = fallback;
    let curls = 0;
    for (const line of shellLines) {
      const up = /^(?:.*\s)?LEASEHOLD_ADMIN_TOKEN=(\S+)\s+docker compose\b.*\bup\b/.exec(line);
      if (up) token = (up[1] ?? '').replace(/^(['"])(.*)\1$/, '$2');
      const bearer = /^curl\b.*Authorization: Bearer ([^'"\s]+)/.exec(line);
      if (bearer) {
        curls++;
        assert.equal(bearer[1], token, `${line}: the cluster's token at this point is ${token}`);
      }
    }
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
    const linked = [...section.matchAll(/\]\((test\/[^)]+\.test\.ts)\)/g)].map((m) => m[1] ?? '');
    assert.ok(linked.includes('test/deploy-kit.test.ts'), 'the test that runs the kit');
    for (const file of linked) assert.ok(exists(file), `${file} exists`);
    const paragraph = section.slice(section.indexOf('test/deploy-kit.test.ts'));
    for (const part of ['nginx.conf', 'prometheus.yml', 'alerts.yml']) assert.ok(paragraph.includes(part), `${part} runs`);
    assert.match(paragraph, /Dockerfile.*docker-compose\.yml.*Kubernetes manifests[^.]*parsed/s, 'the rest is parsed only');
  });
});
