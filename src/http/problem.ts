/**
 * The JSON error answer every route gives: `{statusCode, error, message}`, never a stack trace.
 * @module
 */
import type { FastifyReply } from 'fastify';

const ERRORS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  503: 'Service Unavailable',
};

/** Answers `statusCode` with the JSON error body. */
export function send(reply: FastifyReply, statusCode: number, message: string): FastifyReply {
  const error = ERRORS[statusCode] ?? (statusCode < 500 ? 'Client Error' : 'Internal Server Error');
  return reply.code(statusCode).type('application/json; charset=utf-8').send({ statusCode, error, message });
}
