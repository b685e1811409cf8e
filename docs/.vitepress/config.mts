import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { defineConfig, type DefaultTheme } from 'vitepress';

/** The API reference's sidebar, written by TypeDoc (`npm run docs` runs it first). */
function apiSidebar(): DefaultTheme.SidebarItem[] {
  const file = new URL('../reference/api/typedoc-sidebar.json', import.meta.url);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`docs/reference/api/typedoc-sidebar.json cannot be read (${(err as Error).message}): run \`npm run docs\`, which generates the API reference first`, { cause: err });
  }
  return JSON.parse(text) as DefaultTheme.SidebarItem[];
}

/**
 * The repository's files that the pages link to (examples, the deploy kit): copied into the
 * built site at their place in the repository, so a link such as `../../examples/tasks.ts` from
 * `/guide/background-tasks` opens the file on the site as it does in the repository.
 */
function copyLinkedFiles(srcDir: string, outDir: string, pages: string[]): void {
  const repo = resolve(srcDir, '..');
  for (const page of pages) {
    const from = dirname(join(srcDir, page));
    for (const [, target] of readFileSync(join(srcDir, page), 'utf8').matchAll(/\]\((\.{1,2}\/[^)#\s]+)(?:#[^)]*)?\)/g)) {
      const file = resolve(from, target ?? '');
      const inRepo = relative(repo, file);
      if (!relative(srcDir, file).startsWith('..') || inRepo.startsWith('..')) continue; // a page of the site, or outside the repository
      if (!existsSync(file) || !statSync(file).isFile()) throw new Error(`${page} links to ${target}, which is no file of the repository`);
      mkdirSync(dirname(join(outDir, inRepo)), { recursive: true });
      copyFileSync(file, join(outDir, inRepo));
    }
  }
}

const guide: DefaultTheme.SidebarItem[] = [
  {
    text: 'Introduction',
    items: [
      { text: 'Getting started', link: '/guide/getting-started' },
      { text: 'Installing', link: '/guide/installing' },
    ],
  },
  {
    text: 'Jobs',
    items: [
      { text: 'Defining jobs', link: '/guide/jobs' },
      { text: 'Cron and time zones', link: '/guide/cron' },
      { text: 'Installation jobs and leases', link: '/guide/installation-jobs' },
      { text: 'Background tasks', link: '/guide/background-tasks' },
      { text: 'Decorators', link: '/guide/decorators' },
      { text: 'Embedding in a service', link: '/guide/embedding' },
      { text: 'NestJS', link: '/guide/nestjs' },
      { text: 'Express', link: '/guide/express' },
    ],
  },
  {
    text: 'Seeing and steering',
    items: [
      { text: 'Status', link: '/guide/status' },
      { text: 'Status page', link: '/guide/status-page' },
      { text: 'Metrics', link: '/guide/metrics' },
      { text: 'Tracing', link: '/guide/tracing' },
      { text: 'Control through Redis', link: '/guide/redis-control' },
    ],
  },
  {
    text: 'Running it',
    items: [
      { text: 'Operations and deployment', link: '/guide/deployment' },
      { text: 'Redis: Cluster, Sentinel, TLS, ACL', link: '/guide/redis-setup' },
      { text: 'Security', link: '/guide/security' },
      { text: 'Reliability', link: '/reliability' },
    ],
  },
];

const reference: DefaultTheme.SidebarItem[] = [
  {
    text: 'Reference',
    items: [
      { text: 'Configuration', link: '/reference/configuration' },
      { text: 'CLI', link: '/reference/cli' },
      { text: 'HTTP API', link: '/reference/http-api' },
      { text: 'Redis keys', link: '/reference/redis-keys' },
      { text: 'Errors', link: '/reference/errors' },
      { text: 'MCP tools', link: '/reference/mcp' },
      { text: 'Versioning', link: '/versioning' },
    ],
  },
  { text: 'API', collapsed: false, items: [{ text: 'Overview', link: '/reference/api/' }, ...apiSidebar()] },
];

const compare: DefaultTheme.SidebarItem[] = [
  {
    text: 'Compared with',
    items: [
      { text: 'Other schedulers', link: '/comparison' },
      { text: 'Benchmarks', link: '/benchmarks' },
    ],
  },
  {
    text: 'Migrating',
    items: [
      { text: 'From node-cron', link: '/migrate/node-cron' },
      { text: 'From @nestjs/schedule', link: '/migrate/nestjs-schedule' },
      { text: 'From BullMQ job schedulers', link: '/migrate/bullmq' },
      { text: 'From croner or node-cron with a Redis lock', link: '/migrate/redis-lock' },
    ],
  },
  {
    text: 'Project',
    items: [
      { text: 'Developing leasehold', link: '/development' },
      { text: 'Architecture', link: '/architecture' },
    ],
  },
];

export default defineConfig({
  title: 'leasehold',
  description: 'Distributed scheduled jobs for Node.js services, coordinated through Redis',
  // API Extractor's report of the public API: a file for the API test and reviews, not a page.
  srcExclude: ['api/**'],
  cleanUrls: true,
  // A link to a page that does not exist fails the build; links to a node on localhost are examples.
  ignoreDeadLinks: 'localhostLinks',
  lastUpdated: false,
  buildEnd: (site) => copyLinkedFiles(site.srcDir, site.outDir, site.pages),
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/getting-started', activeMatch: '/guide/' },
      { text: 'Reference', link: '/reference/configuration', activeMatch: '/reference/' },
      { text: 'Migrating', link: '/migrate/node-cron', activeMatch: '/migrate/' },
      { text: 'Compared with', link: '/comparison' },
    ],
    sidebar: {
      '/guide/': guide,
      '/reliability': guide,
      '/reference/': reference,
      '/versioning': reference,
      '/migrate/': compare,
      '/comparison': compare,
      '/benchmarks': compare,
      '/development': compare,
      '/architecture': compare,
    },
    outline: { level: [2, 3] },
    search: { provider: 'local' },
  },
});
