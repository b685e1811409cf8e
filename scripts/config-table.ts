// Rewrites the configuration table in README.md from the code (src/cli/config.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { renderConfigTable } from '../src/cli/config.js';

const path = new URL('../README.md', import.meta.url);
const readme = readFileSync(path, 'utf8');
const next = readme.replace(/(<!-- config-table:start -->\n)[\s\S]*?(<!-- config-table:end -->)/, `$1${renderConfigTable()}\n$2`);
writeFileSync(path, next);
