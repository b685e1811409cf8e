/**
 * The tokens of the HTTP surface, each compared in constant time (SHA-256 digests, of equal
 * length whatever the input): the admin token of the admin routes (no admin at all without
 * one), the optional read token of `GET /manage/*` (a bearer header, or the cookie the status
 * page's sign-in sets), and the optional metrics token of `GET /metrics`.
 * @module
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { ErrorCodes, LeaseholdError } from '../errors.js';

/** The outcome of a check: allowed, or the status and message to answer with. */
export type AuthDecision = { readonly ok: true } | { readonly ok: false; readonly status: 401 | 403; readonly message: string };

const BEARER = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;
/** What a token may hold: what `Authorization: Bearer <token>` can carry. */
export const ADMIN_TOKEN_PATTERN = /^[\x21-\x7e]+$/;
/** The name of the cookie the status page's sign-in sets (HttpOnly, SameSite=Strict). */
export const READ_COOKIE = 'leasehold_read';

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * Checks a configured token: undefined or empty means none; anything no header can carry is
 * refused, since it would refuse every call. The message names `what`, never the value.
 * @throws LeaseholdError `invalidConfig`.
 */
export function checkToken(token: string | undefined, what: string): string | undefined {
  if (token === undefined || token === '') return undefined;
  if (!ADMIN_TOKEN_PATTERN.test(token)) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `${what}: only printable ASCII without spaces fits in "Authorization: Bearer <token>" (the token is not shown)`);
  }
  return token;
}

/** The token of an `Authorization: Bearer <token>` header; undefined when absent, null when malformed. */
export function bearerToken(authorization: string | undefined): string | undefined | null {
  if (authorization === undefined || authorization === '') return undefined;
  return BEARER.exec(authorization)?.[1] ?? null;
}

/** A constant-time matcher for one token; it keeps the digest, not the token. */
function matcher(token: string): (candidate: string) => boolean {
  const expected = digest(token);
  return (candidate) => timingSafeEqual(digest(candidate), expected);
}

/**
 * Builds a checker for `token` (undefined or empty: admin disabled). The token itself is not kept.
 * @throws LeaseholdError `invalidConfig` for a token no header can carry (spaces, non-ASCII),
 *   which would refuse every call; the message does not show it.
 */
export function bearerChecker(token: string | undefined): (authorization: string | undefined) => AuthDecision {
  const configured = checkToken(token, 'admin token');
  const matches = configured === undefined ? undefined : matcher(configured);
  return (authorization) => {
    if (!matches) {
      return { ok: false, status: 403, message: 'admin routes are disabled: no admin token is configured (LEASEHOLD_ADMIN_TOKEN)' };
    }
    const given = bearerToken(authorization);
    if (given === undefined) return { ok: false, status: 401, message: 'an Authorization: Bearer <token> header is required' };
    if (given === null) return { ok: false, status: 401, message: 'malformed Authorization header: expected Bearer <token>' };
    if (!matches(given)) return { ok: false, status: 403, message: 'wrong admin token' };
    return { ok: true };
  };
}

/**
 * The metrics token's checker: without a token every scrape is allowed (as before); with one,
 * `Authorization: Bearer <token>` is required (401 without or malformed, 403 when wrong).
 * @throws LeaseholdError `invalidConfig` for a token no header can carry.
 */
export function metricsChecker(token: string | undefined): (authorization: string | undefined) => AuthDecision {
  const configured = checkToken(token, 'metrics token');
  const matches = configured === undefined ? undefined : matcher(configured);
  return (authorization) => {
    if (!matches) return { ok: true };
    const given = bearerToken(authorization);
    if (given === undefined) return { ok: false, status: 401, message: 'an Authorization: Bearer <LEASEHOLD_METRICS_TOKEN> header is required' };
    if (given === null) return { ok: false, status: 401, message: 'malformed Authorization header: expected Bearer <token>' };
    if (!matches(given)) return { ok: false, status: 403, message: 'wrong metrics token' };
    return { ok: true };
  };
}

/** The value of one cookie in a `Cookie` header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Who may read: see {@link readAccess}. */
export interface ReadAccess {
  /** Whether a read token is configured; without one every read is allowed. */
  readonly protected: boolean;
  /** Checks a read by its `Authorization` and `Cookie` headers. */
  check(authorization: string | undefined, cookie: string | undefined): AuthDecision;
  /**
   * The sign-in: the cookie's value when `candidate` is the read token (or the admin token),
   * else undefined. The value is derived from the token (an HMAC), not the token itself.
   */
  signIn(candidate: string): string | undefined;
}

/**
 * The read token's checker. Without a read token every read is allowed. With one, a read
 * needs `Authorization: Bearer <read token>` (the admin token also reads), or the sign-in
 * cookie. Nothing else: a missing or malformed credential is 401, a wrong one 403.
 * @throws LeaseholdError `invalidConfig` for a token no header can carry.
 */
export function readAccess(readToken: string | undefined, adminToken: string | undefined): ReadAccess {
  const read = checkToken(readToken, 'read token');
  const admin = checkToken(adminToken, 'admin token');
  if (read === undefined) {
    return { protected: false, check: () => ({ ok: true }), signIn: () => undefined };
  }
  const readMatches = matcher(read);
  const adminMatches = admin === undefined ? () => false : matcher(admin);
  // The cookie proves the sign-in without carrying the token: a keyed digest of a fixed text.
  const session = createHmac('sha256', read).update('leasehold read session v1').digest('base64url');
  const sessionMatches = matcher(session);
  const tokenOk = (t: string): boolean => readMatches(t) || adminMatches(t);
  return {
    protected: true,
    check(authorization, cookie) {
      const given = bearerToken(authorization);
      if (typeof given === 'string' && tokenOk(given)) return { ok: true };
      const fromCookie = cookieValue(cookie, READ_COOKIE);
      if (fromCookie !== undefined && sessionMatches(fromCookie)) return { ok: true };
      if (given === null) return { ok: false, status: 401, message: 'malformed Authorization header: expected Bearer <token>' };
      if (typeof given === 'string') return { ok: false, status: 403, message: 'wrong read token' };
      return { ok: false, status: 401, message: 'reads need the read token: Authorization: Bearer <LEASEHOLD_READ_TOKEN>, or sign in on /manage/ui' };
    },
    signIn: (candidate) => (ADMIN_TOKEN_PATTERN.test(candidate) && tokenOk(candidate) ? session : undefined),
  };
}
