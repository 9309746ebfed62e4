import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The request id (docs/api.md, "Request ids"): every answer carries `X-Request-Id`, and
 * every log line of the request carries it as `request_id`.
 *
 * A client (or a proxy in front) may send its own: a well-formed `X-Request-Id` (1 to 128
 * characters of `A-Z a-z 0-9 . _ : @ / + = -`, given once) is kept, so one id follows the
 * request through the client's logs and ours. Anything else is ignored and a UUID made:
 * the id goes into log lines, where spaces, quotes or control characters could forge or
 * break them.
 */
export const REQUEST_ID_HEADER = 'x-request-id';
export const REQUEST_ID_LOG_LABEL = 'request_id';

const WELL_FORMED = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The incoming id when it is well-formed, else undefined. */
export function incomingRequestId(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && WELL_FORMED.test(header) ? header : undefined;
}

/** Fastify's genReqId: the client's well-formed id, or a new UUID. */
export function genRequestId(req: IncomingMessage): string {
  return incomingRequestId(req.headers[REQUEST_ID_HEADER]) ?? randomUUID();
}

/** True when the server made the request's id (a UUID), false when the client's was kept. */
export function isServerRequestId(req: FastifyRequest): boolean {
  return incomingRequestId(req.headers[REQUEST_ID_HEADER]) === undefined;
}

/** onRequest (every route, 404s included): the id on the answer. */
export async function requestIdHook(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.header(REQUEST_ID_HEADER, req.id);
}
