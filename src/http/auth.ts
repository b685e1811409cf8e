/**
 * The admin routes' bearer-token check: constant-time comparison of SHA-256 digests (equal
 * length whatever the input), and no admin at all when no token is configured.
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ErrorCodes, LeaseholdError } from '../errors.js';

/** The outcome of a check: allowed, or the status and message to answer with. */
export type AuthDecision = { readonly ok: true } | { readonly ok: false; readonly status: 401 | 403; readonly message: string };

const BEARER = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;
/** What a token may hold: what `Authorization: Bearer <token>` can carry. */
export const ADMIN_TOKEN_PATTERN = /^[\x21-\x7e]+$/;

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * Builds a checker for `token` (undefined or empty: admin disabled). The token itself is not kept.
 * @throws LeaseholdError `invalidConfig` for a token no header can carry (spaces, non-ASCII),
 *   which would refuse every call; the message does not show it.
 */
export function bearerChecker(token: string | undefined): (authorization: string | undefined) => AuthDecision {
  if (token !== undefined && token !== '' && !ADMIN_TOKEN_PATTERN.test(token)) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, 'admin token: only printable ASCII without spaces fits in "Authorization: Bearer <token>" (the token is not shown)');
  }
  const expected = token === undefined || token === '' ? undefined : digest(token);
  return (authorization) => {
    if (!expected) {
      return { ok: false, status: 403, message: 'admin routes are disabled: no admin token is configured (LEASEHOLD_ADMIN_TOKEN)' };
    }
    if (authorization === undefined || authorization === '') {
      return { ok: false, status: 401, message: 'an Authorization: Bearer <token> header is required' };
    }
    const m = BEARER.exec(authorization);
    if (!m?.[1]) return { ok: false, status: 401, message: 'malformed Authorization header: expected Bearer <token>' };
    if (!timingSafeEqual(digest(m[1]), expected)) return { ok: false, status: 403, message: 'wrong admin token' };
    return { ok: true };
  };
}
