/**
 * The status page's routes, registered by the leasehold plugin beside the status routes:
 * `GET /manage/ui` (the page, or the sign-in form when reads need a token the browser has
 * not given), its files under `/manage/ui/`, `GET /manage/events` (server-sent events),
 * `GET /manage/access` (whether admin actions are enabled and reads protected), and
 * `POST /manage/login` / `POST /manage/logout` (the read cookie).
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ReadAccess } from '../auth.js';
import { READ_COOKIE } from '../auth.js';
import type { StatusEvents } from '../events.js';
import type { AuthFailures } from '../auth-failures.js';
import { send, tooManyFailures } from '../problem.js';
import { LOGIN_CSP, PAGE_CSP, loginHtml, pageHtml, type Assets } from './assets.js';

/** What the page's routes need. */
export interface UiRoutesOptions {
  /** The built files; undefined when not built (the page answers 503 and says so). */
  readonly assets: Assets | undefined;
  readonly access: ReadAccess;
  /** Where a wrong token at the sign-in is counted. */
  readonly failures: AuthFailures;
  /** Whether an admin token is configured. */
  readonly adminEnabled: boolean;
  /** Whether `GET /metrics` needs its own token. */
  readonly metricsProtected: boolean;
  readonly events: StatusEvents;
  /** The read guard of the JSON routes. */
  readonly readOnly: (req: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>;
  readonly headers: object;
  readonly query: object;
}

/** Headers of every HTML answer. */
function htmlHeaders(reply: FastifyReply, csp: string): FastifyReply {
  return reply
    .header('content-security-policy', csp)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8');
}

/** The login route's body: a form field or a JSON property `token`. */
function tokenOf(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const t = (body as Record<string, unknown>)['token'];
  return typeof t === 'string' && t.length <= 4_096 ? t.trim() : undefined;
}

/** Registers the routes on the plugin's instance (its error handler and parsers apply). */
export function registerUiRoutes(app: FastifyInstance, opts: UiRoutesOptions): void {
  const { assets, access, events, readOnly } = opts;
  const schema = { headers: opts.headers, querystring: opts.query };

  // A form posts `application/x-www-form-urlencoded`: the sign-in form works without script.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 8_192 }, (_req, text, done) => {
    done(null, Object.fromEntries(new URLSearchParams(typeof text === 'string' ? text : text.toString('utf8'))));
  });

  /** The page from `/manage/ui` (files under `ui/`) or `/manage/ui/` (files beside it). */
  const page = (base: string, toLogin: string) => async (req: FastifyRequest, reply: FastifyReply) => {
    const decision = access.check(req.headers.authorization, req.headers.cookie);
    if (!decision.ok) return htmlHeaders(reply.code(401), LOGIN_CSP).send(loginHtml(toLogin));
    if (!assets) return send(reply, 503, 'the status page is not built: run npm run build');
    return htmlHeaders(reply, PAGE_CSP).send(pageHtml(assets, base));
  };
  app.get('/manage/ui', { schema }, page('ui/', 'login'));
  app.get('/manage/ui/', { schema }, page('', '../login'));

  app.get<{ Params: { file: string }; Querystring: { v?: string } }>(
    '/manage/ui/:file',
    { schema: { headers: opts.headers, querystring: opts.query, params: { type: 'object', properties: { file: { type: 'string', maxLength: 64 } } } }, onRequest: readOnly },
    async (req, reply) => {
      const asset = assets?.get(req.params.file);
      if (!assets) return send(reply, 503, 'the status page is not built: run npm run build');
      if (!asset) return send(reply, 404, `no file ${JSON.stringify(req.params.file)} in the status page`);
      const etag = `"${asset.hash}"`;
      void reply
        .header('x-content-type-options', 'nosniff')
        .header('etag', etag)
        .header('vary', 'accept-encoding')
        // A URL that names the content's hash never changes: cache it for good.
        .header('cache-control', req.query.v === asset.hash ? 'public, max-age=31536000, immutable' : 'no-cache')
        .type(asset.type);
      if (req.headers['if-none-match'] === etag) return reply.code(304).send();
      const accepts = req.headers['accept-encoding'];
      if (typeof accepts === 'string' && /\bgzip\b/.test(accepts)) return reply.header('content-encoding', 'gzip').send(asset.gzip);
      return reply.send(asset.body);
    },
  );

  // No HEAD twin: a stream has no headers-only form.
  app.get('/manage/events', { schema, onRequest: readOnly, exposeHeadRoute: false }, (req, reply) => {
    reply.hijack();
    events.attach(req.raw, reply.raw);
  });

  app.get('/manage/access', { schema, onRequest: readOnly }, async () => ({
    adminEnabled: opts.adminEnabled,
    readProtected: access.protected,
    metricsProtected: opts.metricsProtected,
  }));

  // The sign-in: the read token (or the admin token) for an HttpOnly, SameSite=Strict cookie
  // that holds a digest of the token, never the token. No Path: the browser scopes it to the
  // folder of this route (`/manage`, or `/<prefix>/manage` behind a proxy's path prefix).
  app.post('/manage/login', { schema: { headers: opts.headers, querystring: opts.query } }, async (req, reply) => {
    if (!access.protected) return reply.code(303).header('location', 'ui').send();
    const wait = opts.failures.retryAfter(req.ip);
    if (wait > 0) return tooManyFailures(reply, wait);
    const token = tokenOf(req.body);
    const session = token === undefined ? undefined : access.signIn(token);
    if (session === undefined) {
      if (token !== undefined && token !== '') opts.failures.fail(req.ip, req.routeOptions.url ?? '/manage/login');
      return htmlHeaders(reply.code(401), LOGIN_CSP).send(loginHtml('login', 'That is not the read token.'));
    }
    // Secure when the request came over TLS, to this node or (with trustProxy) to its proxy.
    const secure = req.protocol === 'https' ? '; Secure' : '';
    return reply.code(303).header('set-cookie', `${READ_COOKIE}=${session}; Max-Age=${access.cookieMaxAge}; HttpOnly; SameSite=Strict${secure}`).header('location', 'ui').send();
  });

  app.post('/manage/logout', { schema: { headers: opts.headers, querystring: opts.query } }, async (req, reply) => {
    const secure = req.protocol === 'https' ? '; Secure' : '';
    return reply.code(303).header('set-cookie', `${READ_COOKIE}=; Max-Age=0; HttpOnly; SameSite=Strict${secure}`).header('location', 'ui').send();
  });
}
