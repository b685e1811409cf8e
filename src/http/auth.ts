/**
 * The tokens of the HTTP surface, each compared in constant time (SHA-256 digests, of equal
 * length whatever the input): the admin token of the admin routes (no admin at all without
 * one), the optional read token of `GET /manage/*` (a bearer header, or the cookie the status
 * page's sign-in sets), and the optional metrics token of `GET /metrics`. A token has at least
 * {@link MIN_TOKEN_LENGTH} characters. The read cookie expires ({@link READ_COOKIE_MAX_AGE_S})
 * and is signed with a secret of its own when one is given, so it can be revoked without
 * changing the token.
 * @module
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { ErrorCodes, leaseholdError } from '../errors.js';
import { systemClock } from '../clock.js';

/**
 * The outcome of a check: allowed, or the status and message to answer with; `wrong` marks a
 * credential that was offered and is not the token (a failed attempt, counted), unlike one
 * that is missing or malformed.
 */
export type AuthDecision = { readonly ok: true } | { readonly ok: false; readonly status: 401 | 403; readonly message: string; readonly wrong?: boolean };

const BEARER = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;
/** What a token may hold: what `Authorization: Bearer <token>` can carry. */
export const ADMIN_TOKEN_PATTERN = /^[\x21-\x7e]+$/;
/** The name of the cookie the status page's sign-in sets (HttpOnly, SameSite=Strict). */
export const READ_COOKIE = 'leasehold_read';
/** The fewest characters a token (or the cookie secret) may have: shorter ones can be guessed. */
export const MIN_TOKEN_LENGTH = 16;
/** How long the read cookie is valid, in seconds (12 hours). */
export const READ_COOKIE_MAX_AGE_S = 12 * 60 * 60;

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * Checks a configured token: undefined or empty means none; anything no header can carry is
 * refused, since it would refuse every call, and so is a token shorter than
 * {@link MIN_TOKEN_LENGTH}. The message names `what`, never the value.
 * @throws LeaseholdError `invalidToken`.
 */
export function checkToken(token: string | undefined, what: string): string | undefined {
  if (token === undefined || token === '') return undefined;
  if (!ADMIN_TOKEN_PATTERN.test(token)) {
    throw leaseholdError(ErrorCodes.invalidToken, { setting: what, problem: 'only printable ASCII without spaces fits in "Authorization: Bearer <token>"' });
  }
  if (token.length < MIN_TOKEN_LENGTH) {
    throw leaseholdError(ErrorCodes.invalidToken, { setting: what, problem: `a token needs at least ${MIN_TOKEN_LENGTH} characters, so that it cannot be guessed (make one with: openssl rand -hex 32)` });
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
 * @throws LeaseholdError `invalidToken` for a token no header can carry (spaces, non-ASCII),
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
    if (!matches(given)) return { ok: false, status: 403, message: 'wrong admin token', wrong: true };
    return { ok: true };
  };
}

/**
 * The metrics token's checker: without a token every scrape is allowed (as before); with one,
 * `Authorization: Bearer <token>` is required (401 without or malformed, 403 when wrong).
 * @throws LeaseholdError `invalidToken` for a token no header can carry.
 */
export function metricsChecker(token: string | undefined): (authorization: string | undefined) => AuthDecision {
  const configured = checkToken(token, 'metrics token');
  const matches = configured === undefined ? undefined : matcher(configured);
  return (authorization) => {
    if (!matches) return { ok: true };
    const given = bearerToken(authorization);
    if (given === undefined) return { ok: false, status: 401, message: 'an Authorization: Bearer <LEASEHOLD_METRICS_TOKEN> header is required' };
    if (given === null) return { ok: false, status: 401, message: 'malformed Authorization header: expected Bearer <token>' };
    if (!matches(given)) return { ok: false, status: 403, message: 'wrong metrics token', wrong: true };
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
   * else undefined. The value is an expiry and an HMAC of it, never the token.
   */
  signIn(candidate: string): string | undefined;
  /** How long the cookie is valid, in seconds (its `Max-Age`). */
  readonly cookieMaxAge: number;
}

/** Options of {@link readAccess}. */
export interface ReadAccessOptions {
  /**
   * The secret the read cookie is signed with; without one, the read token. Changing it signs
   * every browser out without changing the token.
   */
  readonly cookieSecret?: string | undefined;
  /** The present moment, epoch ms. Default the system clock's. */
  readonly now?: () => number;
}

const COOKIE_VALUE = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

/**
 * The read token's checker. Without a read token every read is allowed. With one, a read
 * needs `Authorization: Bearer <read token>` (the admin token also reads), or the sign-in
 * cookie, valid for {@link READ_COOKIE_MAX_AGE_S}. Nothing else: a missing or malformed
 * credential is 401, a wrong or expired one 403.
 * @throws LeaseholdError `invalidToken` for a token no header can carry, or too short.
 */
export function readAccess(readToken: string | undefined, adminToken: string | undefined, opts: ReadAccessOptions = {}): ReadAccess {
  const read = checkToken(readToken, 'read token');
  const admin = checkToken(adminToken, 'admin token');
  const secret = checkToken(opts.cookieSecret, 'cookie secret');
  if (read === undefined) {
    return { protected: false, check: () => ({ ok: true }), signIn: () => undefined, cookieMaxAge: READ_COOKIE_MAX_AGE_S };
  }
  const now = opts.now ?? (() => systemClock.now());
  const readMatches = matcher(read);
  const adminMatches = admin === undefined ? () => false : matcher(admin);
  // The cookie proves the sign-in without carrying the token: its expiry and a keyed digest of it.
  const mac = (expires: string): string => createHmac('sha256', secret ?? read).update(`leasehold read session v2 ${expires}`).digest('base64url');
  const session = (): string => {
    const expires = String(Math.floor(now() / 1000) + READ_COOKIE_MAX_AGE_S);
    return `${expires}.${mac(expires)}`;
  };
  const sessionValid = (value: string): boolean => {
    const m = COOKIE_VALUE.exec(value);
    if (!m?.[1] || !m[2]) return false;
    const signed = timingSafeEqual(digest(m[2]), digest(mac(m[1])));
    return signed && Number(m[1]) * 1000 > now();
  };
  const tokenOk = (t: string): boolean => readMatches(t) || adminMatches(t);
  return {
    protected: true,
    cookieMaxAge: READ_COOKIE_MAX_AGE_S,
    check(authorization, cookie) {
      const given = bearerToken(authorization);
      if (typeof given === 'string' && tokenOk(given)) return { ok: true };
      const fromCookie = cookieValue(cookie, READ_COOKIE);
      if (fromCookie !== undefined && fromCookie !== '' && sessionValid(fromCookie)) return { ok: true };
      if (given === null) return { ok: false, status: 401, message: 'malformed Authorization header: expected Bearer <token>' };
      if (typeof given === 'string') return { ok: false, status: 403, message: 'wrong read token', wrong: true };
      if (fromCookie !== undefined && fromCookie !== '') return { ok: false, status: 401, message: 'the sign-in has expired or was revoked: sign in again on /manage/ui, or send Authorization: Bearer <LEASEHOLD_READ_TOKEN>' };
      return { ok: false, status: 401, message: 'reads need the read token: Authorization: Bearer <LEASEHOLD_READ_TOKEN>, or sign in on /manage/ui' };
    },
    signIn: (candidate) => (ADMIN_TOKEN_PATTERN.test(candidate) && tokenOk(candidate) ? session() : undefined),
  };
}
