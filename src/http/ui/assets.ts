/**
 * The status page's built files (`npm run build` bundles `client/` into
 * `dist/http/ui/assets/`), read once into memory with their gzip form and a content hash,
 * and the two HTML documents around them: the page and the sign-in form. Every URL in them is
 * relative, so the page works behind a load balancer and under a path prefix.
 * @module
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';

/** One built file. */
export interface Asset {
  readonly type: string;
  readonly body: Buffer;
  readonly gzip: Buffer;
  /** A hash of the content: the `?v=` of its URL and its ETag. */
  readonly hash: string;
}

/** The page's files by name (`app.js`, `app.css`). */
export type Assets = ReadonlyMap<string, Asset>;

/** The files the page is made of, with their content types. */
export const ASSET_TYPES: Readonly<Record<string, string>> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

/** Where the built files are: beside this module once built, else (run from source) in the package's dist/. */
const PLACES = [new URL('./assets/', import.meta.url), new URL('../../../dist/http/ui/assets/', import.meta.url)];

function hashOf(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('base64url').slice(0, 16);
}

/** Reads the built files; undefined when they are not built (the page then answers 503 and says so). */
export async function loadAssets(): Promise<Assets | undefined> {
  for (const dir of PLACES) {
    const out = new Map<string, Asset>();
    try {
      for (const [name, type] of Object.entries(ASSET_TYPES)) {
        const body = await readFile(new URL(name, dir));
        out.set(name, { type, body, gzip: gzipSync(body, { level: 9 }), hash: hashOf(body) });
      }
      return out;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return undefined;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The page's Content-Security-Policy: scripts and styles from the page's own origin only (no
 * inline script, no eval), data only from there, never framed.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * The page. `base` is the way from the page's URL to its files: `ui/` from `/manage/ui`,
 * empty from `/manage/ui/`.
 */
export function pageHtml(assets: Assets, base: string): string {
  const v = (name: string): string => `${base}${name}?v=${assets.get(name)?.hash ?? ''}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>leasehold</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${escapeHtml(v('app.css'))}">
<script type="module" src="${escapeHtml(v('app.js'))}"></script>
</head>
<body>
<noscript><p>The status page needs JavaScript. The same data is served as JSON by <code>GET /manage/jobs</code>.</p></noscript>
<div id="app" data-state="loading"><p class="boot">Loading the status…</p></div>
</body>
</html>
`;
}

const LOGIN_STYLE = `
:root{color-scheme:light dark;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
body{margin:0;min-height:100vh;display:grid;place-items:center;background:Canvas;color:CanvasText}
main{width:min(24rem,calc(100vw - 2rem));padding:1.5rem;border:1px solid GrayText;border-radius:.5rem}
h1{font-size:1.25rem;margin:0 0 1rem}
label{display:block;font-weight:600;margin-bottom:.25rem}
input{box-sizing:border-box;width:100%;font:inherit;padding:.5rem;margin-bottom:1rem}
button{font:inherit;padding:.5rem 1rem;cursor:pointer}
p.error{color:#b00020;font-weight:600}
@media (prefers-color-scheme:dark){p.error{color:#ff8a80}}
:focus-visible{outline:3px solid Highlight;outline-offset:2px}
`;

/** The sign-in form's CSP: no script at all, only its own inline style (by hash). */
export const LOGIN_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(LOGIN_STYLE).digest('base64')}'`,
  "img-src data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * The sign-in form of a node whose reads need a token. It works without script: it posts the
 * token to `POST /manage/login`, which sets the cookie and sends the browser back to the page.
 * `action` is the way from the form's URL to the login route.
 */
export function loginHtml(action: string, message?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Sign in · leasehold</title>
<link rel="icon" href="data:,">
<style>${LOGIN_STYLE}</style>
</head>
<body>
<main>
<h1>leasehold status</h1>
<p>This node's status needs its read token (<code>LEASEHOLD_READ_TOKEN</code>).</p>
${message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : ''}
<form method="post" action="${escapeHtml(action)}" autocomplete="off">
<label for="token">Read token</label>
<input id="token" name="token" type="password" required autofocus autocomplete="off" spellcheck="false">
<button type="submit">Sign in</button>
</form>
</main>
</body>
</html>
`;
}
