/// <reference lib="dom" />
/**
 * Debian's Chromium (`/usr/bin/chromium`, or `CHROMIUM`) driven by playwright-core, headless,
 * in a fresh profile directory removed on close; no browser is downloaded. And axe-core's
 * accessibility scan of a page.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** The Chromium binary the tests drive. */
export const CHROMIUM = process.env['CHROMIUM'] ?? '/usr/bin/chromium';

/** Chromium's flags: headless, no sandbox (root in CI), nothing that reaches the network by itself. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A browser with its own fresh profile. */
export interface TestBrowser {
  readonly context: BrowserContext;
  page(): Promise<Page>;
  close(): Promise<void>;
}

/** Starts Chromium with a fresh `--user-data-dir` (playwright's persistent context on a new temporary directory). */
export async function openBrowser(opts: { width?: number; height?: number } = {}): Promise<TestBrowser> {
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 900 },
  });
  return {
    context,
    page: async () => {
      const page = await context.newPage();
      page.on('pageerror', (err) => process.stderr.write(`page error: ${err.message}\n`));
      return page;
    },
    async close() {
      await context.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** One axe-core violation, as the tests report it. */
export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: string[];
}

let axeSource: string | undefined;

/**
 * Runs axe-core on the page (injected through the DevTools protocol, which the page's CSP does
 * not govern) and returns the violations of the given impacts.
 */
export async function axeViolations(page: Page, impacts: readonly string[] = ['serious', 'critical']): Promise<AxeViolation[]> {
  axeSource ??= await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }> }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  return violations.filter((v) => v.impact !== null && impacts.includes(v.impact));
}
