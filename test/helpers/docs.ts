/**
 * The pages of the documentation, for the tests that keep them true.
 * @module
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './node.js';

/**
 * README.md and every page of the docs site under docs/, as paths relative to the repository;
 * not the site's build (.vitepress), API Extractor's report (docs/api) or TypeDoc's generated
 * reference (docs/reference/api).
 */
export function docPages(): string[] {
  const out = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir))) {
      const rel = join(dir, entry);
      if (entry === '.vitepress' || rel === join('docs', 'api') || rel === join('docs', 'reference', 'api')) continue;
      if (statSync(join(ROOT, rel)).isDirectory()) walk(rel);
      else if (entry.endsWith('.md')) out.push(rel);
    }
  };
  walk('docs');
  return out;
}
