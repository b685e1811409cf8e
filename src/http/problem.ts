/**
 * The JSON error answer every route gives: `{statusCode, error, message}` (and `code`, for an
 * error of leasehold's that names its own status), never a stack trace.
 * @module
 */
import type { FastifyReply } from 'fastify';

const ERRORS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  429: 'Too Many Requests',
  503: 'Service Unavailable',
};

/** Answers `statusCode` with the JSON error body, with the error's `code` when it has one of leasehold's. */
export function send(reply: FastifyReply, statusCode: number, message: string, code?: string): FastifyReply {
  const error = ERRORS[statusCode] ?? (statusCode < 500 ? 'Client Error' : 'Internal Server Error');
  return reply.code(statusCode).type('application/json; charset=utf-8').send(code === undefined ? { statusCode, error, message } : { statusCode, error, message, code });
}

/** Answers 429 to a client that failed too many token attempts, with `Retry-After`. */
export function tooManyFailures(reply: FastifyReply, retryAfterS: number): FastifyReply {
  void reply.header('retry-after', String(retryAfterS));
  return send(reply, 429, `too many failed token attempts from this address: try again in ${retryAfterS} s`);
}
