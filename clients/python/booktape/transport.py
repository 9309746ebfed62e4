"""HTTP to the API with the standard library: the key, gzip, retries of 429 / 503, typed errors.

The rules mirror the TypeScript client (libs/sdk/src/retry.ts, transport.ts): a 429 or 503
is retried up to ``max_retries`` times, waiting exactly what Retry-After says when it says
anything (the API knows when its window ends) and jittered exponential back-off when it does
not; a Retry-After longer than ``max_retry_delay`` (a monthly quota resets in days) is not
waited, the error goes to the caller at once. A request that got no answer at all (refused,
reset, timed out), or an answer cut off while its body was read, is tried again the same
way: every call the client makes is a read, and the API does not bill an answer it could not
send whole.

Nothing the network or a server does raises a bare Python exception: a body that is not
what its headers say (broken gzip, text that is not UTF-8) is a ``BooktapeError`` with code
``invalid_response``, a connection lost for good (before or during the answer) one with
code ``connection_error``.
"""
from __future__ import annotations

import collections
import email.utils
import gzip
import http.client
import random
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass, field
from typing import Callable, Deque, Dict, Mapping, Optional, Sequence, Tuple

from .errors import BooktapeError, error_from_response

RETRY_STATUSES = frozenset({429, 503})
#: What a connection that broke (refused, reset, timed out, closed early, spoke no HTTP) raises.
BROKEN = (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, OSError)
USER_AGENT = "booktape-python/0.1"


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Retry-After (RFC 9110 10.2.3) in seconds: delay-seconds or an HTTP date (a past one is 0).

    Anything else (absent, negative, a fraction, garbage) is None: "no advice".
    """
    if value is None:
        return None
    v = value.strip()
    if v.isdigit():
        return float(int(v))
    # Only text that looks like an HTTP date is read as one (the weekday and GMT).
    if not re.match(r"^[A-Za-z]{3},? .*GMT$", v):
        return None
    try:
        at = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    if at is None:
        return None
    return max(0.0, at.timestamp() - (time.time() if now is None else now))


@dataclass(frozen=True)
class RetryPolicy:
    #: Attempts after the first.
    max_retries: int = 3
    #: The longest Retry-After worth waiting, in seconds; a longer one is raised at once.
    max_retry_delay: float = 60.0
    #: First back-off step (seconds) when an answer gave no Retry-After; doubles per attempt.
    base_delay: float = 0.5


def retry_delay(policy: RetryPolicy, attempt: int, retry_after: Optional[float], rand: Callable[[], float] = random.random) -> Optional[float]:
    """Seconds to wait before retry number ``attempt`` (0-based), or None for "do not retry"."""
    if attempt >= policy.max_retries:
        return None
    if retry_after is not None:
        return retry_after if retry_after <= policy.max_retry_delay else None
    step = min(policy.max_retry_delay, policy.base_delay * 2**attempt)
    # A random point in the upper half of the step: clients refused together spread out.
    return step / 2 + rand() * (step / 2)


def next_link(header: Optional[str]) -> Optional[str]:
    """The target of ``rel="next"`` in a Link header (RFC 8288), or None."""
    if not header:
        return None
    for part in re.split(r",(?=\s*<)", header):
        m = re.match(r"^\s*<([^>]*)>(.*)$", part)
        if m and re.search(r';\s*rel\s*=\s*"?(?:[^";]*\s)?next(?:\s[^";]*)?"?\s*(?:;|$)', m.group(2), re.I):
            return m.group(1)
    return None


@dataclass
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str

    def text(self) -> str:
        """The body as UTF-8 text; a body that is not UTF-8 raises ``BooktapeError`` (``invalid_response``)."""
        try:
            return self.body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BooktapeError(
                self.status, "invalid_response",
                f"the answer from {self.url} is not UTF-8 text (byte {e.start}: {self.body[e.start:e.start + 1]!r})",
                None, self.body[:200],
            ) from None

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name)


@dataclass
class Transport:
    base_url: str
    api_key: Optional[str] = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float = 120.0
    headers: Dict[str, str] = field(default_factory=dict)
    #: Replaced in tests to observe waits without waiting; time.sleep otherwise.
    sleep: Callable[[float], None] = time.sleep
    #: The latest requests, as (url, status): lets a caller (and the tests) see the paging.
    #: Bounded, so a client that lives as long as its process does not grow with it.
    log: Deque[Tuple[str, int]] = field(default_factory=lambda: collections.deque(maxlen=1000))

    def __post_init__(self) -> None:
        parsed = urllib.parse.urlsplit(self.base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise BooktapeError(None, "invalid_parameter", f"base_url must be an http(s) URL, got {self.base_url!r}", "base_url")
        # A path prefix (a reverse proxy mounting the API under /booktape) is kept.
        self._origin = f"{parsed.scheme}://{parsed.netloc}"
        self._prefix = parsed.path.rstrip("/")
        if self._prefix.endswith("/api/v1"):
            self._prefix = self._prefix[: -len("/api/v1")]

    def url(self, path: str, query: Sequence[Tuple[str, str]] = ()) -> str:
        """An absolute URL for an API path (``/api/v1/…``) or a Link target (``/api/v1/…?…``)."""
        if path.startswith(("http://", "https://")):
            return path
        if self._prefix and not path.startswith(self._prefix + "/"):
            path = self._prefix + path
        q = urllib.parse.urlencode(list(query))
        return f"{self._origin}{path}{('&' if '?' in path else '?') + q if q else ''}"

    def _headers(self, accept: str, compressed: bool) -> Dict[str, str]:
        h = {"Accept": accept, "User-Agent": USER_AGENT, **self.headers}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        # urllib decodes nothing itself; gzip is what the standard library reads. Files
        # (exports) are asked for as they are: a .csv.gz is already gzip.
        h["Accept-Encoding"] = "gzip" if compressed else "identity"
        return h

    def open(self, url: str, accept: str = "application/json", compressed: bool = True):
        """The open HTTP response of a 2xx answer (to stream), after the retries; raises otherwise."""
        req = urllib.request.Request(url, headers=self._headers(accept, compressed), method="GET")
        attempt = 0
        while True:
            try:
                res = urllib.request.urlopen(req, timeout=self.timeout)
                self.log.append((url, res.status))
                return res
            except urllib.error.HTTPError as e:
                status = e.code
                self.log.append((url, status))
                retry_after = parse_retry_after(e.headers.get("Retry-After"))
                text = _error_text(e, url)
                e.close()
                wait = retry_delay(self.retry, attempt, retry_after) if status in RETRY_STATUSES else None
                if wait is None:
                    raise error_from_response(status, text, retry_after, e.headers.get("X-Request-Id")) from None
            except BROKEN as e:
                # No answer at all: retried like a 503 without Retry-After.
                self.log.append((url, 0))
                wait = retry_delay(self.retry, attempt, None)
                if wait is None:
                    reason = getattr(e, "reason", e)
                    raise BooktapeError(None, "connection_error", f"no answer from {url}: {reason}") from e
            self.sleep(wait)
            attempt += 1

    def get(self, url: str, accept: str = "application/json") -> Response:
        """A whole 2xx answer, its body decoded (gzip); an answer cut off is asked for again."""
        attempt = 0
        while True:
            res = self.open(url, accept)
            try:
                with res:
                    raw = res.read()
            except BROKEN as e:
                # Cut off mid-body (reset, closed early, timed out): retried like no answer.
                self.log.append((url, 0))
                wait = retry_delay(self.retry, attempt, None)
                if wait is None:
                    raise BooktapeError(res.status, "connection_error", f"the connection broke while reading the answer from {url}: {_reason(e)}") from e
                self.sleep(wait)
                attempt += 1
                continue
            return Response(res.status, res.headers, decode_body(raw, res.headers.get("Content-Encoding"), url, res.status), url)

    def json(self, url: str, parse_float: Callable[[str], object] = float) -> object:
        import json

        res = self.get(url)
        try:
            return json.loads(res.body, parse_float=parse_float)
        except (ValueError, RecursionError) as e:
            if isinstance(e, UnicodeDecodeError):
                res.text()  # raises the invalid_response that says where the text is not UTF-8
            raise BooktapeError(res.status, "invalid_response", f"expected JSON from {url}, got {res.header('Content-Type') or 'no content type'}", None, res.body[:200]) from None


def decode_body(body: bytes, encoding: Optional[str], url: str, status: Optional[int] = None) -> bytes:
    """The body as sent before its Content-Encoding (gzip, deflate); one that does not decode
    raises ``BooktapeError`` (``invalid_response``)."""
    enc = (encoding or "").strip().lower()
    try:
        if enc in ("gzip", "x-gzip"):
            return gzip.decompress(body)
        if enc == "deflate":
            return zlib.decompress(body)
    except (OSError, EOFError, zlib.error) as e:
        raise BooktapeError(status, "invalid_response", f"the answer from {url} says Content-Encoding {enc} but its body does not decode ({len(body)} bytes): {e}", None, body[:200]) from None
    return body


def _reason(e: BaseException) -> str:
    reason = getattr(e, "reason", None) or e
    return f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__


def _error_text(e: urllib.error.HTTPError, url: str) -> str:
    """The text of a refusal's body, as best it can be read: the status decides the error,
    so a body cut off, not gzip or not UTF-8 is kept as far as it goes."""
    try:
        raw = e.read()
    except BROKEN:
        return ""
    try:
        raw = decode_body(raw, e.headers.get("Content-Encoding"), url, e.code)
    except BooktapeError:
        pass
    return raw.decode("utf-8", "replace")
