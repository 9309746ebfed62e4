"""The booktape API from Python: ``Client`` and the results it hands back."""
from __future__ import annotations

import os
import re
import tempfile
import urllib.parse
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from . import frames
from .errors import BooktapeError, bad_argument
from .times import DateLike, TimeLike, date_text, time_ms
from .transport import BROKEN, RetryPolicy, Transport, next_link

DEFAULT_URL = "http://127.0.0.1:8080"

#: A venue by any of its names → the API's path segment.
VENUES: Dict[str, str] = {
    "exchange-a": "exchange-a", "polymarket": "exchange-a", "a": "exchange-a",
    "exchange-b": "exchange-b", "kalshi": "exchange-b", "b": "exchange-b",
}
#: The query parameter naming a market on each venue (condition id on A, ticker on B).
MARKET_PARAM = {"exchange-a": "condition_id", "exchange-b": "ticker"}


def venue_path(venue: str) -> str:
    """``polymarket`` / ``exchange-a`` / ``a`` → ``exchange-a``; ``kalshi`` / ``exchange-b`` / ``b`` → ``exchange-b``."""
    v = VENUES.get(str(venue).strip().lower()) if isinstance(venue, str) else None
    if v is None:
        raise bad_argument("venue", f"venue must be polymarket / exchange-a or kalshi / exchange-b, got {venue!r}")
    return v


def _no_asset_on_b(v: str, asset_id: Optional[str]) -> None:
    if asset_id is not None and v == "exchange-b":
        raise bad_argument("asset_id", "asset_id is for exchange A (Polymarket) outcome tokens; an exchange B market is its ticker")


#: The most buckets one summary answer holds (the API's limit, docs/api.md "Order-book summaries").
MAX_BUCKETS = 100_000


def summary_windows(start_ms: int, end_ms: int, resolution: Any, max_buckets: int = MAX_BUCKETS) -> List[Tuple[int, int]]:
    """The windows to ask for so that none holds more than ``max_buckets`` buckets.

    A bucket belongs to the window its start lies in, and buckets start at multiples of the
    resolution (from the epoch), so windows cut at bucket starts answer exactly the buckets of
    the whole window, each complete (the API reads a bucket's data past a window's end). A
    resolution the API would refuse is sent as given, in one window, for the API to name.
    """
    if not isinstance(resolution, int) or isinstance(resolution, bool) or not 1 <= resolution <= 3600 or start_ms > end_ms:
        return [(start_ms, end_ms)]
    r = resolution * 1000
    first = -(-start_ms // r) * r
    last = (end_ms // r) * r
    if last < first or (last - first) // r + 1 <= max_buckets:
        return [(start_ms, end_ms)]
    out = []
    a = first
    while a <= last:
        b = min(last, a + (max_buckets - 1) * r)
        out.append((start_ms if a == first else a, end_ms if b == last else b))
        a = b + r
    return out


#: The most days one coverage answer holds (docs/api.md, "Coverage map").
MAX_COVERAGE_DAYS = 31


def date_windows(first: str, last: str, max_days: int = MAX_COVERAGE_DAYS) -> List[Tuple[str, str]]:
    """Consecutive ranges of at most ``max_days`` UTC dates covering ``first`` to ``last``
    (``YYYY-MM-DD``); a reversed range is sent as given, for the API to refuse."""
    import datetime as dt

    a, z = dt.date.fromisoformat(first), dt.date.fromisoformat(last)
    if z < a:
        return [(first, last)]
    out = []
    while a <= z:
        b = min(z, a + dt.timedelta(days=max_days - 1))
        out.append((a.isoformat(), b.isoformat()))
        a = b + dt.timedelta(days=1)
    return out


def _object(value: Any, what: str) -> Dict[str, Any]:
    """A JSON answer that must be an object (every answer of the API is one)."""
    if not isinstance(value, dict):
        raise BooktapeError(200, "invalid_response", f"{what} is not a JSON object (got {type(value).__name__})")
    return value


class RawResult:
    """Every raw record of a market in an inclusive window, fetched page by page as it is read.

    Iterating yields the API's JSON records (dicts, docs/api.md "Records"), following the
    cursors: a page is requested only when the loop reaches it, so breaking out stops the
    requests. Each iteration (and each ``to_df()``) asks the API again.
    """

    def __init__(self, client: "Client", venue: str, query: List[Tuple[str, str]], asset_id: Optional[str], page_size: Optional[int]):
        self._client = client
        self.venue = venue
        self._query = query
        self.asset_id = asset_id
        self.page_size = page_size

    def _url(self, extra: Sequence[Tuple[str, str]]) -> str:
        limit = [("limit", str(self.page_size))] if self.page_size else []
        return self._client._t.url(f"/api/v1/{self.venue}/market/data/range", [*self._query, *limit, *extra])

    def pages(self) -> Iterator[Dict[str, Any]]:
        """The JSON pages (envelopes) one by one, following ``next_cursor``."""
        cursor: Optional[str] = None
        while True:
            # Decimals for any number with a fraction a record carries (venue extras): exact, as the prices are.
            page = _object(self._client._t.json(self._url([("cursor", cursor)] if cursor else []), parse_float=Decimal), "a page of records")
            yield page
            p = page.get("pagination") or {}
            if not p.get("has_more") or not p.get("next_cursor"):
                return
            cursor = p["next_cursor"]

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        for page in self.pages():
            for r in page.get("data") or []:
                if self.asset_id is None or r.get("asset_id") == self.asset_id:
                    yield r

    def to_list(self) -> List[Dict[str, Any]]:
        return list(self)

    def csv_pages(self) -> Iterator[str]:
        """The API's long CSV pages (one row per price level change), following the Link header."""
        url: Optional[str] = self._url([("format", "csv")])
        while url is not None:
            res = self._client._t.get(url, accept="text/csv")
            yield res.text()
            nxt = next_link(res.header("Link"))
            url = None if nxt is None else self._client._t.url(nxt)

    def to_df(self):
        """A DataFrame in the API's long format (docs/api.md, Formats): one row per price level
        change, the event's fields repeated on each; typed as described in ``booktape.frames``."""
        keep = None if self.asset_id is None else (lambda row: row.get("asset_id") == self.asset_id)
        header, cols = frames.csv_columns(self.csv_pages(), keep)
        return frames.typed_frame(header, cols)

    to_pandas = to_df


class _Answer:
    """One JSON answer: ``.raw`` is the whole envelope, ``.data`` its items."""

    def __init__(self, raw: Dict[str, Any]):
        self.raw = raw

    @property
    def data(self) -> Any:
        return self.raw.get("data")

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __repr__(self) -> str:
        head = {k: v for k, v in self.raw.items() if k != "data"}
        return f"{type(self).__name__}({head})"


class SummaryResult(_Answer):
    """Order-book summary buckets (OHLC of best bid, best ask, mid, spread), numbers as Decimal."""

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(self.data or [])

    def __len__(self) -> int:
        return len(self.data or [])

    def to_df(self):
        """One row per bucket, each OHLC in four columns, in the order of the API's summary CSV."""
        return frames.summary_frame(self.data or [])

    to_pandas = to_df


class BookResult(_Answer):
    """The book at an instant. Exchange A: ``bids`` (highest first) and ``asks`` (lowest first);
    exchange B: ``yes`` and ``no`` (both bid books, highest first). Levels are ``{price, size}``
    decimal strings as the API sent them; ``to_df()`` makes them Decimal."""

    @property
    def data(self) -> Any:
        return self.raw

    def to_df(self):
        """The levels as long rows: timestamp, as_of, is_known, side, level (0 = best), price, size."""
        return frames.book_frame(self.raw)

    to_pandas = to_df


class CoverageResult(_Answer):
    """Per UTC day: records, gaps, cross-checks and a status (complete / partial / missing)."""

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(self.data or [])

    @property
    def trustworthy(self) -> bool:
        """Every day complete and fully checked: the range can be trusted as stored."""
        days = self.data or []
        return bool(days) and all(d.get("status") == "complete" and d.get("checks_complete") for d in days)

    def to_df(self):
        return frames.coverage_frame(self.data or [])

    to_pandas = to_df

    def gaps_df(self):
        """Every gap, one row each: day, kind, start, end, duration, detail."""
        return frames.gaps_frame(self.data or [])


@dataclass
class ExportResult:
    """A bulk export written to ``path`` (gzipped long CSV, or Parquet)."""

    path: str
    #: The name the API gave it (Content-Disposition).
    filename: Optional[str]
    content_type: str
    #: UTC days covered (X-Export-Days): what it counted against the quota.
    days: int
    size: int
    venue: str

    def to_df(self):
        """The file as a DataFrame: a CSV export typed like ``RawResult.to_df()`` / a summary
        frame; a Parquet export through ``pandas.read_parquet`` (needs pyarrow)."""
        if self.content_type.startswith("application/vnd.apache.parquet") or self.path.endswith(".parquet"):
            pd = frames.pandas()
            try:
                return pd.read_parquet(self.path)
            except ImportError:
                raise ImportError("reading a Parquet export needs pyarrow: pip install 'booktape[parquet]', or export with format='csv'") from None
        import gzip
        import zlib

        try:
            with gzip.open(self.path, "rt", encoding="utf-8", newline="") as f:
                text = f.read()
        except (OSError, EOFError, UnicodeDecodeError, zlib.error) as e:
            raise BooktapeError(None, "invalid_response", f"the export {self.path} is not a gzipped UTF-8 CSV file: {e}") from None
        header, cols = frames.csv_columns([text])
        return frames.typed_frame(header, cols)

    to_pandas = to_df


class Client:
    """The booktape API. ``Client()`` reads ``BOOKTAPE_API_URL`` (default http://127.0.0.1:8080)
    and ``BOOKTAPE_API_KEY``; arguments win over the environment.

    Venues are ``polymarket`` / ``exchange-a`` and ``kalshi`` / ``exchange-b``; a market is a
    condition id on exchange A and a ticker on exchange B. Times: see ``booktape.times``.
    429 and 503 answers are retried as Retry-After says (``max_retries``, ``max_retry_delay``
    seconds); other refusals raise a ``BooktapeError`` subclass.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        max_retries: int = 3,
        max_retry_delay: float = 60.0,
        retry_base_delay: float = 0.5,
        timeout: float = 120.0,
        headers: Optional[Dict[str, str]] = None,
    ) -> None:
        url = base_url or os.environ.get("BOOKTAPE_API_URL") or DEFAULT_URL
        key = api_key if api_key is not None else os.environ.get("BOOKTAPE_API_KEY")
        self._t = Transport(url, key or None, RetryPolicy(max_retries, max_retry_delay, retry_base_delay), timeout, dict(headers or {}))
        self._max_buckets = MAX_BUCKETS
        self._max_coverage_days = MAX_COVERAGE_DAYS

    @property
    def base_url(self) -> str:
        return self._t.base_url

    @property
    def requests(self) -> List[Tuple[str, int]]:
        """The requests this client made (the latest 1,000), as (url, status), oldest first."""
        return list(self._t.log)

    def _market(self, v: str, market: Optional[str], required: bool = True) -> List[Tuple[str, str]]:
        if market is None or market == "":
            if required:
                raise bad_argument(MARKET_PARAM[v], f"{MARKET_PARAM[v]}: a market is required ({'condition id' if v == 'exchange-a' else 'ticker'})")
            return []
        return [(MARKET_PARAM[v], str(market))]

    def _json(self, v: str, rest: str, query: List[Tuple[str, str]]) -> Dict[str, Any]:
        # Decimals for every number with a fraction: the API writes summary numbers from
        # their exact decimals, and a price read as a double is not the price.
        return _object(self._t.json(self._t.url(f"/api/v1/{v}/{rest}", query), parse_float=Decimal), f"the {rest} answer")

    def raw(self, venue: str, market: str, start: TimeLike, end: TimeLike, asset_id: Optional[str] = None, *, page_size: Optional[int] = None) -> RawResult:
        """Every raw record of a market from ``start`` to ``end`` inclusive, in serving order.

        Lazy: requests are made while the result is iterated (or turned into a frame).
        ``asset_id`` keeps one outcome token of an exchange A market (filtered here: the API
        serves the whole market). ``page_size``: records per request (API default 10,000).
        """
        v = venue_path(venue)
        _no_asset_on_b(v, asset_id)
        s, e = time_ms(start, "start"), time_ms(end, "end", end=True)
        if s > e:
            raise bad_argument("start", f"start ({s} ms) is after end ({e} ms)")
        q = [*self._market(v, market), ("start_timestamp", str(s)), ("end_timestamp", str(e))]
        return RawResult(self, v, q, None if asset_id is None else str(asset_id), page_size)

    def summary(self, venue: str, market: str, start: TimeLike, end: TimeLike, resolution: int = 60, asset_id: Optional[str] = None) -> SummaryResult:
        """Summary buckets of ``resolution`` seconds (1 … 3600) from ``start`` to ``end`` inclusive.

        Exchange A summaries are per outcome token: ``asset_id`` is required there. A window
        of more buckets than one answer holds (100,000: a day at 1 s) is asked for in parts,
        cut at bucket starts, and joined: the same buckets as one answer would hold.
        """
        v = venue_path(venue)
        _no_asset_on_b(v, asset_id)
        q = [*self._market(v, market)]
        if asset_id is not None:
            q.append(("asset_id", str(asset_id)))
        s, e = time_ms(start, "start"), time_ms(end, "end", end=True)
        answers = [self._json(v, "market/orderbook-summary", [*q, ("start_timestamp", str(a)), ("end_timestamp", str(b)), ("resolution", str(resolution))]) for a, b in summary_windows(s, e, resolution, self._max_buckets)]
        head = dict(answers[0])
        head["data"] = [b for a in answers for b in a.get("data") or []]
        head["data_points"] = len(head["data"])
        if "end_timestamp" in answers[-1]:
            head["end_timestamp"] = answers[-1]["end_timestamp"]
        return SummaryResult(head)

    def book(self, venue: str, market: Optional[str], at: TimeLike, depth: Optional[int] = None, asset_id: Optional[str] = None) -> BookResult:
        """The full book at an instant (``depth`` levels a side, API default 10).

        Exchange A books are per outcome token: ``asset_id`` is required, ``market`` (the
        condition id) optional. Exchange B: ``market`` is the ticker.
        """
        v = venue_path(venue)
        _no_asset_on_b(v, asset_id)
        if v == "exchange-a" and asset_id is None:
            raise bad_argument("asset_id", "asset_id: an exchange A book is an outcome token's; give its asset id")
        q = [*self._market(v, market, required=v == "exchange-b")]
        if asset_id is not None:
            q.append(("asset_id", str(asset_id)))
        q.append(("timestamp", str(time_ms(at, "at"))))
        if depth is not None:
            q.append(("depth", str(depth)))
        return BookResult(self._json(v, "market/book", q))

    def coverage(self, venue: str, market: str, start_date: DateLike, end_date: DateLike) -> CoverageResult:
        """Per UTC day from ``start_date`` to ``end_date`` inclusive: records, gaps, cross-checks,
        status. Not billed. A range longer than one answer holds (31 days) is asked for in
        parts of 31 days and joined."""
        v = venue_path(venue)
        first, last = date_text(start_date, "start_date"), date_text(end_date, "end_date")
        answers = [self._json(v, "market/coverage", [*self._market(v, market), ("start_date", a), ("end_date", b)]) for a, b in date_windows(first, last, self._max_coverage_days)]
        head = dict(answers[0])
        head["data"] = [d for a in answers for d in a.get("data") or []]
        head["end_date"] = answers[-1].get("end_date", last)
        return CoverageResult(head)

    def date_range(self, venue: str, market: str) -> Dict[str, Any]:
        """The stored UTC dates of a market: first, last, how many."""
        v = venue_path(venue)
        return self._json(v, "market/date-range", self._market(v, market))

    def markets(self, venue: str, prefix: Optional[str] = None, *, page_size: Optional[int] = None) -> Iterator[str]:
        """Every market with data (condition ids on A, tickers on B), in byte order, page by page."""
        v = venue_path(venue)
        offset = 0
        while True:
            q = [("prefix", prefix)] if prefix else []
            q += [("offset", str(offset))] + ([("limit", str(page_size))] if page_size else [])
            page = self._json(v, "market/list", q)
            ids = page.get("market_condition_ids") or page.get("market_tickers") or []
            yield from ids
            if not (page.get("pagination") or {}).get("has_more") or not ids:
                return
            offset += len(ids)

    def replay_stream(
        self,
        markets: Sequence[str],
        start: TimeLike,
        end: TimeLike,
        *,
        snapshot_interval: Optional[str] = None,
        depth: Optional[int] = None,
    ) -> Iterator[Dict[str, Any]]:
        """The merged replay stream (``GET /replay/stream``): many markets of both venues in one
        time order, normalised, as the API sends them, one message (a dict) at a time.

        ``markets``: ``exchange-a:<asset_id>`` / ``polymarket:<asset_id>`` and
        ``exchange-b:<ticker>`` / ``kalshi:<ticker>``. Messages: ``start``, each market's
        opening ``book``, then ``book``, ``book_change``, ``trade``, ``gap`` and ``snapshot``
        (with ``snapshot_interval`` such as ``"60s"`` and ``depth``), and ``end``. Lazy: the
        answer is read as the iterator is; closing it (or leaving the loop) ends the request.
        Prices and sizes stay decimal text. An ``error`` line, or a stream cut before its
        ``end``, raises ``BooktapeError``. Counts one quota unit per UTC day of the window.
        """
        if isinstance(markets, str):
            markets = [markets]
        s, e = time_ms(start, "start"), time_ms(end, "end", end=True)
        if s > e:
            raise bad_argument("start", f"start ({s} ms) is after end ({e} ms)")
        q: List[Tuple[str, str]] = [("markets", str(m)) for m in markets]
        q += [("from", str(s)), ("to", str(e))]
        if snapshot_interval is not None:
            q.append(("snapshot_interval", str(snapshot_interval)))
        if depth is not None:
            q.append(("depth", str(depth)))
        url = self._t.url("/api/v1/replay/stream", q)
        return self._ndjson_messages(url)

    def _ndjson_messages(self, url: str) -> Iterator[Dict[str, Any]]:
        import json

        # Uncompressed: each line is read as it arrives.
        with self._t.open(url, accept="application/x-ndjson", compressed=False) as res:
            ended = False
            while True:
                try:
                    line = res.readline()
                except BROKEN as e:
                    raise BooktapeError(res.status, "connection_error", f"the connection broke while reading the replay stream from {url}: {e!r}") from e
                if not line:
                    break
                if not line.strip():
                    continue
                m = _object(json.loads(line), "a replay stream line")
                if m.get("type") == "error":
                    err = m.get("error") or {}
                    raise BooktapeError(res.status, str(err.get("code", "internal_error")), str(err.get("message", "the replay stream failed")))
                if m.get("type") == "end":
                    ended = True
                yield m
            if not ended:
                raise BooktapeError(res.status, "invalid_response", "the replay stream ended before its end line: the messages so far are complete, ask again from the last ts")

    def export(
        self,
        venue: str,
        market: str,
        start_date: DateLike,
        end_date: DateLike,
        path: Optional[str] = None,
        *,
        kind: str = "raw",
        resolution: Optional[int] = None,
        asset_id: Optional[str] = None,
        format: str = "csv",
    ) -> ExportResult:
        """A bulk export of up to 31 UTC days written to a file, and what was written.

        ``path``: a file name, an existing directory (the API's file name inside it), or None
        (the API's file name in the current directory). The file appears under its name only
        once complete. ``kind`` raw or summary (at ``resolution`` s); ``format`` csv (gzipped)
        or parquet. Counts against the monthly quota as the days it covers.
        """
        v = venue_path(venue)
        _no_asset_on_b(v, asset_id)
        q = [*self._market(v, market), ("start_date", date_text(start_date, "start_date")), ("end_date", date_text(end_date, "end_date")), ("kind", kind), ("format", format)]
        if resolution is not None:
            q.append(("resolution", str(resolution)))
        if asset_id is not None:
            q.append(("asset_id", str(asset_id)))
        url = self._t.url(f"/api/v1/{v}/market/export", q)
        with self._t.open(url, accept="*/*", compressed=False) as res:
            given = content_disposition_filename(res.headers.get("Content-Disposition"))
            filename = None if given is None else safe_filename(given)
            target = path
            if target is None or os.path.isdir(target):
                directory = os.path.abspath(target or ".")
                if given is None:
                    raise BooktapeError(res.status, "invalid_response", "the export named no file; pass path= a file name")
                if filename is None:
                    raise BooktapeError(
                        res.status, "invalid_response",
                        f"the export's file name {given!r} is not a plain file name (a path, '..' or control characters); nothing was written: pass path= a file name",
                    )
                target = os.path.join(directory, filename)
                # What safe_filename let through is one plain name: it cannot leave the directory.
                if os.path.dirname(target) != directory:
                    raise BooktapeError(res.status, "invalid_response", f"the export's file name {given!r} would be written outside {directory}; nothing was written")
            directory = os.path.dirname(os.path.abspath(target))
            try:
                fd, tmp = tempfile.mkstemp(prefix=".booktape-export-", dir=directory)
            except OSError as e:
                raise bad_argument("path", f"cannot write the export into {directory}: {e.strerror or e}") from e
            size = 0
            try:
                with os.fdopen(fd, "wb") as out:
                    while True:
                        try:
                            chunk = res.read(1 << 20)
                        except BROKEN as e:
                            raise BooktapeError(res.status, "connection_error", f"the connection broke after {size} bytes of the export from {url}; nothing was kept: {e!r}") from e
                        if not chunk:
                            break
                        out.write(chunk)
                        size += len(chunk)
                os.replace(tmp, target)
            except BaseException:
                os.unlink(tmp)
                raise
            return ExportResult(target, filename, res.headers.get("Content-Type") or "application/octet-stream", int(res.headers.get("X-Export-Days") or 0), size, v)


def content_disposition_filename(header: Optional[str]) -> Optional[str]:
    """The file name a Content-Disposition header gives (RFC 6266): ``filename*`` (RFC 8187,
    UTF-8) first, then ``filename`` quoted or not; None when it gives none. As sent: see
    ``safe_filename`` before using it as a path."""
    if not header:
        return None
    m = re.search(r"filename\*\s*=\s*(?:UTF-8|utf-8)''([^;\s]+)", header)
    if m:
        name = urllib.parse.unquote(m.group(1), encoding="utf-8", errors="replace")
        return name or None
    m = re.search(r'filename\s*=\s*"((?:[^"\\]|\\.)*)"', header)
    if m:
        return re.sub(r"\\(.)", r"\1", m.group(1)) or None
    m = re.search(r"filename\s*=\s*([^;\s]+)", header)
    return m.group(1) if m else None


def safe_filename(name: str) -> Optional[str]:
    """``name`` when it is one plain file name, safe to join to a directory; None otherwise:
    empty, ``.``, ``..`` or any name starting with a dot (hidden, or a way up), holding a path
    separator (``/`` or ``\\``), a drive (``C:``) or a control character, or longer than 255
    bytes. The API's names (``exchange-a_<market>_<first>_<last>.csv.gz``) are all plain."""
    if not isinstance(name, str) or name.strip() == "" or name.startswith("."):
        return None
    if "/" in name or "\\" in name or re.search(r"[\x00-\x1f\x7f]", name) or re.match(r"^[A-Za-z]:", name):
        return None
    if len(name.encode("utf-8", "surrogatepass")) > 255 or name != name.strip():
        return None
    return name
