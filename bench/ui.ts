/// <reference lib="dom" />
/**
 * The status page's figures (not a timed test): the size of what a browser loads, and how
 * long Chromium takes to show 1,000 jobs (from navigation to the first full render, the
 * `leasehold:rendered` mark) and to apply a change of all 1,000 at once (the
 * `leasehold:update` measure), against a real `leasehold start` node and redis-server.
 *
 *   npm run build && npx tsx bench/ui.ts                  # prints the figures
 *   npx tsx bench/ui.ts --screenshots                     # also writes docs/ui-overview.png and docs/ui-job.png
 *   BENCH_UI_JOBS=50 BENCH_UI_LOADS=1 npx tsx bench/ui.ts --screenshots   # the screenshots, quickly
 *
 * Chromium is Debian's (`/usr/bin/chromium`, or `CHROMIUM`), driven by playwright-core.
 * @module
 */
import { gzipSync } from 'node:zlib';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { spread } from './analyze.js';
import { createRunner, defineTask } from '../src/index.js';
import { memoryLogger } from '../test/helpers/log.js';
import { openBrowser } from '../test/helpers/browser.js';
import { spawnLeasehold, type NodeProc } from '../test/helpers/node.js';
import { startRedis } from '../test/helpers/redis.js';

const JOBS = Number(process.env['BENCH_UI_JOBS'] ?? '1000');
const LOADS = Number(process.env['BENCH_UI_LOADS'] ?? '7');
const screenshots = process.argv.includes('--screenshots');

async function startNode(redisUrl: string, jobs: string, env: Record<string, string>): Promise<{ proc: NodeProc; base: string }> {
  const proc = spawnLeasehold(['start', '--jobs', jobs], { REDIS_URL: redisUrl, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env });
  const line = await proc.waitFor((l) => typeof l['port'] === 'number', 60_000);
  return { proc, base: `http://127.0.0.1:${String(line['port'])}/manage/` };
}

function kb(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KB`;
}

async function main(): Promise<void> {
  const redis = await startRedis();
  // Every job fires every 20 s: the page gets a change of all of them at once.
  const node = await startNode(redis.url, 'bench/workers/status-jobs.mjs', { BENCH_JOBS: String(JOBS), BENCH_CRON: '*/20 * * * * *', BENCH_BODY_MS: '5', LEASEHOLD_PREFIX: 'benchui' });
  const browser = await openBrowser({ width: 1400, height: 900 });
  try {
    // What a browser loads: the page, its script and stylesheet, and the first event (1,000 jobs).
    const page = await browser.page();
    const sizes: Array<[string, number, number]> = [];
    page.on('response', (res) => {
      const url = res.url();
      if (!/\/manage\/ui(\/|$)|app\.(js|css)/.test(url)) return;
      void res.body().then((b) => sizes.push([new URL(url).pathname, b.length, gzipSync(b).length]), () => undefined);
    });
    await page.goto(`${node.base}ui`);
    await page.waitForFunction((n) => document.querySelectorAll('tr[data-job-id]').length === n, JOBS, { timeout: 60_000 });
    const snapshot = await page.evaluate(async (base) => {
      const res = await fetch(`${base}jobs`);
      return (await res.text()).length;
    }, node.base);

    // Loads: navigation to the full render of every job.
    const renders: number[] = [];
    const builds: number[] = [];
    const firstPaint: number[] = [];
    for (let i = 0; i < LOADS; i++) {
      await page.goto(`${node.base}ui?load=${i}`);
      await page.waitForFunction(() => performance.getEntriesByName('leasehold:rendered').length > 0, undefined, { timeout: 60_000 });
      renders.push(await page.evaluate(() => performance.getEntriesByName('leasehold:rendered')[0]?.startTime ?? NaN));
      builds.push(await page.evaluate(() => performance.getEntriesByName('leasehold:render')[0]?.duration ?? NaN));
      firstPaint.push(await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN));
    }

    // Changes: wait for two fires of all jobs and read how long applying each took.
    await page.waitForFunction((n) => performance.getEntriesByName('leasehold:update').some((m) => Number((m as PerformanceMeasure).detail) >= n * 0.9), JOBS, { timeout: 60_000, polling: 500 });
    await sleep(1_000);
    const updates = await page.evaluate(() => performance.getEntriesByName('leasehold:update').map((m) => ({ ms: m.duration, jobs: Number((m as PerformanceMeasure).detail) })));
    const big = updates.filter((u) => u.jobs >= JOBS * 0.5);

    const r = spread(renders);
    console.log(`Status page with ${JOBS} jobs, Chromium ${browser.context.browser()?.version() ?? '(persistent context)'}, ${LOADS} loads`);
    console.log(`  navigation to every row rendered: median ${r.p50.toFixed(0)} ms, max ${r.max.toFixed(0)} ms (first contentful paint median ${spread(firstPaint).p50.toFixed(0)} ms)`);
    const b = spread(builds);
    console.log(`  of which building the ${JOBS} rows (script, before layout): median ${b.p50.toFixed(0)} ms, max ${b.max.toFixed(0)} ms`);
    console.log(`  applying a change of ${big.length ? Math.max(...big.map((u) => u.jobs)) : 0} jobs at once: ${big.map((u) => `${u.ms.toFixed(1)} ms`).join(', ') || 'none seen'}`);
    console.log(`  smaller changes (${updates.length - big.length}): max ${Math.max(0, ...updates.filter((u) => u.jobs < JOBS * 0.5).map((u) => u.ms)).toFixed(1)} ms`);
    const seen = new Map(sizes.map(([p, raw, gz]) => [p, [raw, gz] as const]));
    let total = 0;
    let totalGz = 0;
    for (const [p, [raw, gz]] of seen) {
      console.log(`  ${p}: ${kb(raw)} (${kb(gz)} gzip)`);
      total += raw;
      totalGz += gz;
    }
    console.log(`  the page's files together: ${kb(total)} (${kb(totalGz)} gzip)`);
    console.log(`  GET /manage/jobs with ${JOBS} jobs (the first event carries the same): ${kb(snapshot)}`);

    if (screenshots) await shoot(redis.url, browser);
  } finally {
    await browser.close();
    node.proc.kill();
    await node.proc.exited;
    await redis.stop();
  }
}

/**
 * A node of background tasks beside the example jobs, for the executors on the overview: webhooks
 * on a loop executor given more than it can do (its queue grows), e-mails on a queue executor.
 */
async function taskNode(redisUrl: string): Promise<{ stop(): Promise<void> }> {
  const webhook = defineTask({ id: 'notify-webhook', executor: 'webhooks', run: (ms: number) => sleep(ms) });
  const email = defineTask({ id: 'send-receipt', executor: 'email', run: (to: string) => sleep(30).then(() => to) });
  const runner = createRunner({
    redisUrl,
    prefix: 'shots',
    instanceId: 'tasks-1',
    logger: memoryLogger('warn').logger,
    shutdownGrace: '100ms',
    executors: { webhooks: { kind: 'loop', concurrency: 4 }, email: { kind: 'queue', concurrency: 2 } },
  });
  runner.addTask(webhook);
  runner.addTask(email);
  await runner.start();
  let going = true;
  const feed = (async () => {
    for (let i = 0; going; i++) {
      // Five webhooks a second for four slots of a second each: the queue keeps growing.
      await Promise.all([1, 2, 3, 4, 5].map(() => runner.submit(webhook, 1_000)));
      if (i % 3 === 0) await runner.submit(email, `customer-${i}@example.com`);
      await sleep(1_000);
    }
  })();
  return {
    async stop() {
      going = false;
      await feed;
      await runner.stop();
    },
  };
}

/** Screenshots for the README and the docs (docs/ui-*.png): the overview and a job's page, of the example jobs (and a node of tasks). */
async function shoot(redisUrl: string, browser: Awaited<ReturnType<typeof openBrowser>>): Promise<void> {
  const env = { LEASEHOLD_PREFIX: 'shots', LEASEHOLD_ADMIN_TOKEN: 'screenshot-admin-token-0123456789' };
  const nodes = await Promise.all([
    startNode(redisUrl, 'examples/jobs.ts', { ...env, LEASEHOLD_INSTANCE_ID: 'web-1' }),
    startNode(redisUrl, 'examples/jobs.ts', { ...env, LEASEHOLD_INSTANCE_ID: 'web-2' }),
  ]);
  const tasks = await taskNode(redisUrl);
  try {
    const first = nodes[0];
    if (!first) return;
    await sleep(25_000);
    // One job paused, to show the state.
    await fetch(`${first.base}jobs/export-batches/pause`, { method: 'POST', headers: { authorization: 'Bearer screenshot-admin-token-0123456789' } });
    const page = await browser.page();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${first.base}ui`);
    await page.waitForSelector('tr[data-job-id]');
    // The task node's figures reach Redis every 5 s: the page sees its queue grow twice.
    await page.waitForSelector('tr[data-executor="webhooks"][data-growing]', { timeout: 30_000 });
    await sleep(1_500);
    const docs = fileURLToPath(new URL('../docs/', import.meta.url));
    await page.screenshot({ path: `${docs}ui-overview.png`, fullPage: true });
    await page.goto(`${first.base}ui#/jobs/digest`);
    await page.waitForSelector('table.runs tbody tr', { timeout: 60_000 });
    await sleep(1_500);
    await page.screenshot({ path: `${docs}ui-job.png`, fullPage: true });
    console.log(`  screenshots: ${docs}ui-overview.png, ${docs}ui-job.png`);
  } finally {
    await tasks.stop();
    for (const n of nodes) n.proc.kill();
    await Promise.all(nodes.map((n) => n.proc.exited));
  }
}

await main();
