// Rewrites the generated tables of README.md from the code: the configuration table
// (src/cli/config.ts), the Redis key table (src/redis/keys.ts) and the error table
// (src/errors.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { renderConfigTable } from '../src/cli/config.js';
import { renderKeyTable } from '../src/redis/keys.js';
import { renderErrorTable } from '../src/errors.js';

const path = new URL('../README.md', import.meta.url);
const section = (text: string, name: string, body: string): string =>
  text.replace(new RegExp(`(<!-- ${name}:start -->\\n)[\\s\\S]*?(<!-- ${name}:end -->)`), `$1${body}\n$2`);
let readme = readFileSync(path, 'utf8');
readme = section(readme, 'config-table', renderConfigTable());
readme = section(readme, 'key-table', renderKeyTable());
readme = section(readme, 'error-table', renderErrorTable());
writeFileSync(path, readme);
