import type { FastifyError, FastifyInstance } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ApiError, LookupUnavailableError, TooManyConcurrentError, codeForStatus, errorBody, isUnavailable, type ErrorCode } from './errors.ts';
import { MISSING } from './params.ts';

/** Maps any error to the body of docs/rules/api-decisions.md. Messages are shown only below 500. */
export function toErrorBody(err: FastifyError & { statusCode?: number }): { status: number; code: ErrorCode; message: string; param?: string } {
  if (err instanceof ApiError) {
    return { status: err.statusCode, code: err.code, message: err.message, ...(err.param === undefined ? {} : { param: err.param }) };
  }
  if (hasZodFastifySchemaValidationErrors(err)) {
    const issue = err.validation[0]!;
    const param = issue.instancePath.replace(/^\//, '').split('/')[0] || undefined;
    const missing = issue.message === MISSING;
    const message = param ? `${param} ${issue.message}` : `${err.validationContext ?? 'request'}: ${issue.message}`;
    return { status: 400, code: missing ? 'missing_parameter' : 'invalid_parameter', message, ...(param ? { param } : {}) };
  }
  if (isUnavailable(err)) return { status: 503, code: 'service_unavailable', message: 'a backing service is unavailable, retry later' };
  const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
  if (status === 500) return { status, code: 'internal_error', message: 'internal error' };
  return { status, code: codeForStatus(status), message: err.message };
}

/** Every error and every unknown route answers with the error body. */
export function setErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const e = toErrorBody(err);
    if (e.status >= 500) {
      if (e.status === 503) req.log.warn({ err }, 'backing service unavailable');
      else req.log.error({ err }, 'request failed');
    }
    if (e.status === 503) reply.header('retry-after', err instanceof LookupUnavailableError ? String(err.retryAfterS) : '1');
    // Headers a data answer set before it failed describe that answer, not this error: an
    // error is never cached, nor does it point at a next page.
    for (const h of ['etag', 'link', 'x-total-count']) reply.removeHeader(h);
    reply.header('cache-control', 'no-store');
    if (err instanceof TooManyConcurrentError) {
      reply.header('retry-after', String(err.concurrency.retry_after_seconds));
      return reply.status(429).send({ error: { code: err.code, message: err.message }, concurrency: err.concurrency });
    }
    return reply.status(e.status).send(errorBody(e.code, e.message, e.param));
  });
  app.setNotFoundHandler((req, reply) => reply.status(404).send(errorBody('not_found', `no route ${req.method} ${req.url.split('?')[0]}`)));
}
