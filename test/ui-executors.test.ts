/// <reference lib="dom" />
/**
 * The executors on the status page, in Chromium (playwright-core) against two runners on a real
 * redis-server: the configured executors show before any task, a row per node for a loop
 * executor and one for a queue executor; the queue depth and the counts change live as tasks
 * are submitted and end; a queue that keeps growing is marked in words; the section reads as
 * cards on a phone and passes axe-core in light and dark. Needs `npm run build`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Page } from 'playwright-core';
import { createRunner, defineTask, type Runner } from '../src/index.js';
import { axeViolations, openBrowser, type TestBrowser } from './helpers/browser.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

/** The io tasks wait on this gate, so the test decides when the queue drains. */
let open: () => void = () => undefined;
const gate = new Promise<void>((resolve) => (open = resolve));

const fetchTask = defineTask({
  id: 'fetch',
  executor: 'io',
  async run(n: number) {
    if (n > 0) await gate;
    return n;
  },
});
const mailTask = defineTask({ id: 'send', executor: 'mail', run: (to: string) => `sent to ${to}` });

function runner(redisUrl: string, instanceId: string): Runner {
  const r = createRunner({
    redisUrl,
    prefix: 'uiexec',
    instanceId,
    logger: memoryLogger('warn').logger,
    shutdownGrace: '200ms',
    executors: { io: { kind: 'loop', concurrency: 1 }, mail: { kind: 'queue', lease: '2s' } },
  });
  r.addTask(fetchTask);
  r.addTask(mailTask);
  return r;
}

/** The text of one cell of an executor's row. */
function cell(page: Page, row: string, field: string): Promise<string | null> {
  return page.textContent(`${row} td[data-field="${field}"]`);
}

describe('executors on the status page in Chromium', { timeout: 120_000 }, () => {
  let redis: TestRedis;
  let a: Runner;
  let b: Runner;
  let app: FastifyInstance;
  let browser: TestBrowser;
  let page: Page;
  let base: string;

  before(async () => {
    redis = await startRedis();
    a = runner(redis.url, 'node-a');
    b = runner(redis.url, 'node-b');
    await Promise.all([a.start(), b.start()]);
    app = Fastify();
    await app.register(a.routes);
    base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/manage/`;
    browser = await openBrowser();
    page = await browser.page();
  });
  after(async () => {
    open();
    await browser?.close();
    await app?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
  });

  it('lists the configured executors before any task, and says none has had a task yet', async () => {
    await page.goto(`${base}ui`);
    await page.waitForSelector('tr[data-executor="io"][data-instance="node-a"]');
    assert.ok(await page.$('tr[data-executor="mail"][data-kind="queue"]'), 'the queue executor');
    assert.match((await page.textContent('#executors')) ?? '', /No task has been submitted to these executors yet/);
    assert.equal(await cell(page, 'tr[data-executor="io"][data-instance="node-a"]', 'queued'), '0');
  });

  it('shows the queue depth and counts change live; a queue that keeps growing stands out; every node has its row, a queue one', async () => {
    const io = 'tr[data-executor="io"][data-instance="node-a"]';
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    // Node b runs one task, and a queue task goes to whichever node is free.
    await (await b.submit(fetchTask, 0)).result();
    const handles = [await a.submit(fetchTask, 1)];
    await Promise.all([(await a.submit(mailTask, 'x@example.com')).result(), (await a.submit(mailTask, 'y@example.com')).result()]);
    await page.waitForFunction((row) => document.querySelector(`${row} td[data-field="active"]`)?.textContent === '1', io, { timeout: 5_000 });
    assert.equal(await page.$('#executors [data-empty="tasks"]'), null, 'the note goes once a task is in');

    // One more task waits every 1.2 s (the page's figures are read every second): the queue keeps growing.
    for (let i = 2; i <= 9 && !(await page.$(`${io}[data-growing="true"]`)); i++) {
      handles.push(await a.submit(fetchTask, i));
      await sleep(1_200);
    }
    await page.waitForSelector(`${io}[data-growing="true"]`, { timeout: 3_000 });
    // The depth is every task submitted but the one running (the page may be a read behind).
    await page.waitForFunction(([row, n]) => document.querySelector(`${row} td[data-field="queued"] .depth`)?.textContent === String(n), [io, handles.length - 1] as const, { timeout: 3_000 });
    assert.ok(handles.length - 1 >= 2, `the queue grew to ${handles.length - 1}`);
    assert.match((await page.textContent(`${io} td[data-field="queued"]`)) ?? '', /growing/, 'in words, not only colour');
    assert.match((await page.textContent('#executors .growing-note')) ?? '', /Queue growing: io/);

    // On a phone each row is a card, nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 800 });
    assert.equal(await page.$eval('table.executors', (t) => getComputedStyle(t).display), 'block');
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390), 'no sideways scrolling');
    await page.setViewportSize({ width: 1280, height: 900 });
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const violations = await axeViolations(page);
      assert.deepEqual(violations, [], `${scheme}: ${JSON.stringify(violations, null, 1)}`);
    }
    await page.emulateMedia({ colorScheme: 'light' });

    // The queue drains: depth 0, the counts up, the mark gone.
    open();
    await Promise.all(handles.map((h) => h.result()));
    await page.waitForFunction((row) => document.querySelector(`${row} td[data-field="queued"]`)?.textContent === '0' && !document.querySelector(`${row}[data-growing]`), io, { timeout: 5_000 });
    assert.equal(await cell(page, io, 'succeeded'), String(handles.length));
    assert.equal(await cell(page, io, 'active'), '0');
    assert.equal(await page.$('#executors .growing-note'), null);

    // The queue executor: one row, its figures the cluster's.
    assert.equal((await page.$$('tr[data-executor="mail"]')).length, 1);
    await page.waitForFunction(() => document.querySelector('tr[data-executor="mail"] td[data-field="succeeded"]')?.textContent === '2', undefined, { timeout: 5_000 });
    assert.match((await page.textContent('tr[data-executor="mail"]')) ?? '', /whole cluster/);
    // Node b's row, from the figures it writes to Redis every few seconds.
    await page.waitForFunction(() => document.querySelector('tr[data-executor="io"][data-instance="node-b"] td[data-field="succeeded"]')?.textContent === '1', undefined, { timeout: 10_000 });
    assert.deepEqual(requests.filter((u) => u.includes('/manage/executors') || u.includes('/manage/jobs')), [], 'no polling: the event stream carries the executors');
  });
});
