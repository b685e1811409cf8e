/**
 * Every link of the README and of the docs pages resolves: a link to a page or a file of the
 * repository names one that exists, and a link to a heading (`page.md#heading`, `#heading`)
 * names a heading of that page, under the anchor both GitHub and the docs site give it. The
 * docs build (`npm run docs`) also fails on a link to a page that does not exist; this test
 * runs without it, and checks the headings and the repository's files too. Links into the
 * generated API reference (docs/reference/api/) are left to the build, which generates it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { docPages } from './helpers/docs.js';
import { ROOT } from './helpers/node.js';

/** A page's text without its fenced code blocks (a link in code is no link). */
function prose(page: string): string {
  return readFileSync(join(ROOT, page), 'utf8').replace(/^(```|:::)[^\n]*\n[\s\S]*?^\1\s*$/gm, (block) => (block.startsWith(':::') ? block : ''));
}

/** A heading's text as rendered: links become their text, emphasis and code marks go. */
function headingText(raw: string): string {
  return raw.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '').trim();
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as dashes. */
function githubSlug(text: string): string {
  return text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** The anchor the docs site (VitePress) gives a heading: runs of punctuation and spaces become one dash. */
function siteSlug(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[\s~`!@#$%^&*()\-_+=[\]{}|\\;:"'“”‘’<>,.?/]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .replace(/^(\d)/, '_$1')
    .toLowerCase();
}

/** The anchors of a page's headings that both GitHub and the site give it. */
function anchors(page: string): Set<string> {
  const out = new Set<string>();
  for (const m of prose(page).matchAll(/^#{1,6} (.+)$/gm)) {
    const text = headingText(m[1] ?? '');
    if (githubSlug(text) === siteSlug(text)) out.add(siteSlug(text));
  }
  return out;
}

/** Every problem with the links of `text`, the prose of `page`. */
function problems(page: string, text = prose(page)): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const link = m[1] ?? '';
    if (/^[a-z]+:/.test(link)) continue; // https:, mailto:
    const [path = '', anchor] = link.split('#');
    const target = path === '' ? page : normalize(join(dirname(page), path));
    if (target.startsWith('..')) {
      out.push(`${page}: ${link} leaves the repository`);
      continue;
    }
    if (target.startsWith(join('docs', 'reference', 'api'))) continue;
    if (!existsSync(join(ROOT, target))) {
      out.push(`${page}: ${link}: ${target} does not exist`);
      continue;
    }
    if (anchor !== undefined && target.endsWith('.md') && !anchors(target).has(anchor)) {
      out.push(`${page}: ${link}: ${relative('.', target)} has no heading #${anchor}`);
    }
  }
  return out;
}

test('every link of the README, the changelog and the docs pages resolves, headings included', () => {
  const all = [...docPages(), 'CHANGELOG.md'];
  assert.ok(all.length >= 30, `found ${all.length} pages`);
  assert.deepEqual(all.flatMap((page) => problems(page)), []);
});

test('a link to a page or a heading that does not exist is found', () => {
  const page = join('docs', 'guide', 'jobs.md');
  const found = problems(page, '[a](./no-such-page.md) [b](./cron.md#no-such-heading) [c](./cron.md#daylight-saving) [d](../../examples/jobs.ts) [e](#retries)');
  assert.equal(found.length, 2, found.join('\n'));
  assert.match(found[0] ?? '', /no-such-page\.md does not exist/);
  assert.match(found[1] ?? '', /has no heading #no-such-heading/);
});

test('no page of the README, the changelog or the docs holds a merge\'s conflict markers', () => {
  const marked = [...docPages(), 'CHANGELOG.md'].filter((page) => /^(<{7}|>{7})( |$)|^={7}$/m.test(readFileSync(join(ROOT, page), 'utf8')));
  assert.deepEqual(marked, []);
});
