"""Errors the client raises: one class per kind of refusal, all BooktapeError.

The API answers every error as ``{"error": {"code", "message", "param"}}`` (docs/api.md,
Errors); the client keeps those fields, the HTTP status and, on a 429 or 503, how long the
API asked to wait. Catch the subclass you can act on, or BooktapeError for any.
"""
from __future__ import annotations

import json
from typing import Any, Optional


class BooktapeError(Exception):
    """An answer the API refused, or one the client could not read.

    ``code`` is the API's own (``invalid_parameter``, ``unauthorized``, ``rate_limited``, …);
    ``http_error`` when the body was not the API's error shape (a proxy's page, say);
    ``invalid_response`` when a 2xx body was not what was asked for or not what its headers
    say (not JSON, not gzip, not UTF-8; an export named by a path, not a file name);
    ``connection_error`` when no whole answer came (refused, reset, cut off mid-body), after
    the retries. ``status`` is None for arguments the client refused before sending anything.
    """

    def __init__(
        self,
        status: Optional[int],
        code: str,
        message: str,
        param: Optional[str] = None,
        body: Any = None,
        retry_after: Optional[float] = None,
        request_id: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        #: The query parameter at fault (the API's ``param``), when it named one.
        self.param = param
        #: The parsed body (or its text when it was not JSON).
        self.body = body
        #: Seconds the API asked to wait (Retry-After) on a 429 / 503 that was not retried.
        self.retry_after = retry_after
        #: The answer's X-Request-Id, to quote when asking the operator about it.
        self.request_id = request_id

    def __str__(self) -> str:
        where = f" ({self.param})" if self.param else ""
        status = f"{self.status} " if self.status is not None else ""
        return f"{status}{self.code}{where}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, param={self.param!r}, message={self.message!r})"


class BadRequestError(BooktapeError, ValueError):
    """400 (and 413 / 415): a parameter is missing or wrong; ``param`` names it.

    Also raised before any request for arguments the client can tell are wrong (an unknown
    venue, a naive datetime); those have ``status`` None. A ValueError too, so code that
    already catches ValueError for bad input keeps working.
    """


class AuthenticationError(BooktapeError):
    """401 (no key, a malformed or unknown key) or 403 (a revoked key, another user's data)."""


class NotFoundError(BooktapeError):
    """404: no such route or resource (an unknown slug, a token nothing was rolled up for)."""


class QuotaError(BooktapeError):
    """429: a plan's monthly quota or per-second limit was reached and not waited out.

    A burst limit (Retry-After of a second) is retried by the client; one that still fails
    after the retries, or a monthly quota (Retry-After of days, beyond ``max_retry_delay``),
    ends here. ``quota`` says which limit, its window and when it resets.
    """

    @property
    def quota(self) -> Optional[dict]:
        q = self.body.get("quota") if isinstance(self.body, dict) else None
        return q if isinstance(q, dict) else None


class ServiceUnavailableError(BooktapeError):
    """503: a store of the API was unreachable or saturated, and stayed so through the retries."""


def _class_for(status: int) -> type:
    if status in (400, 413, 415):
        return BadRequestError
    if status in (401, 403):
        return AuthenticationError
    if status == 404:
        return NotFoundError
    if status == 429:
        return QuotaError
    if status == 503:
        return ServiceUnavailableError
    return BooktapeError


def error_from_response(status: int, text: str, retry_after: Optional[float] = None, request_id: Optional[str] = None) -> BooktapeError:
    """The error for a non-2xx answer, from its status, body text and Retry-After."""
    body: Any = text
    try:
        body = json.loads(text)
    except ValueError:
        pass
    cls = _class_for(status)
    e = body.get("error") if isinstance(body, dict) else None
    if isinstance(e, dict) and isinstance(e.get("code"), str) and isinstance(e.get("message"), str):
        param = e.get("param") if isinstance(e.get("param"), str) else None
        return cls(status, e["code"], e["message"], param, body, retry_after, request_id)
    snippet = f": {text[:200]}" if text else ""
    return cls(status, "http_error", f"HTTP {status}{snippet}", None, body, retry_after, request_id)


def bad_argument(param: str, message: str) -> BadRequestError:
    """An argument refused before any request was made."""
    return BadRequestError(None, "invalid_parameter", message, param)
