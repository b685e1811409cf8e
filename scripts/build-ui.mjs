// Builds the status page (src/http/ui/client/) into dist/http/ui/assets/: the TypeScript
// bundled into one ES module and the stylesheet, both minified by esbuild (which the tsx
// dependency brings). No other file and no CDN: the package ships what the page loads.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const from = fileURLToPath(new URL('../src/http/ui/client/', import.meta.url));
const to = fileURLToPath(new URL('../dist/http/ui/assets/', import.meta.url));

await build({
  entryPoints: { app: `${from}main.ts` },
  outdir: to,
  bundle: true,
  format: 'esm',
  target: ['es2022', 'chrome100', 'firefox100', 'safari16'],
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
await build({
  entryPoints: { app: `${from}app.css` },
  outdir: to,
  bundle: true,
  minify: true,
  target: ['chrome100', 'firefox100', 'safari16'],
  logLevel: 'warning',
});
