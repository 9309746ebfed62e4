"""Results as pandas DataFrames, typed: pandas is imported only here, and only when asked for.

Column types, the same for every frame:

- Times (``timestamp``, ``received_at``, ``as_of``, …): ``datetime64[ns, UTC]``.
- Prices, sizes, deltas, mids, spreads: ``decimal.Decimal`` objects (an ``object`` column),
  exactly the decimal the API sent, trailing zeros kept (``Decimal("0.4100")``). Not floats,
  because 0.57 has no float and a price that changes in the 17th digit is not the price;
  not strings, because ``"10" < "9"`` and ``df.price * df.size`` would not work: a Decimal
  sorts, compares and multiplies exactly in plain pandas, with no pyarrow needed. For speed
  on large frames, ``df["price"].astype(float)`` is one line away.
- Counts and sequence numbers: pandas' nullable ``Int64``; flags: ``bool``; the rest
  (ids, sides, types): ``object`` strings, None where the row has no value.
"""
from __future__ import annotations

import csv
import io
from decimal import Decimal
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence


def pandas():
    try:
        import pandas as pd  # noqa: PLC0415  (optional dependency, imported when a frame is asked for)
    except ImportError:  # pragma: no cover - depends on the machine
        raise ImportError("to_df() needs pandas: pip install 'booktape[pandas]' (or apt-get install python3-pandas)") from None
    return pd


OHLC_FIELDS = ("best_bid", "best_ask", "mid_price", "spread")
#: The columns of a summary frame, in the order of the API's summary CSV (docs/api.md, Formats).
SUMMARY_COLUMNS = (
    "timestamp", "quote_count", "is_forward_filled", "best_bid", "best_bid_size", "best_ask", "best_ask_size", "mid_price", "spread",
    *(f"{f}_{p}" for f in OHLC_FIELDS for p in ("open", "high", "low", "close")),
)
_SUMMARY_DECIMALS = frozenset(c for c in SUMMARY_COLUMNS if c not in ("timestamp", "quote_count", "is_forward_filled"))

#: Which raw long-format columns hold what (docs/api.md, Formats: the long format).
_TIME_COLUMNS = frozenset({"timestamp", "received_at", "as_of_ms"})
_DECIMAL_COLUMNS = frozenset({"price", "size", "delta"})
_INT_COLUMNS = frozenset({"seq", "sid", "expected_seq", "level", "quote_count"})
_BOOL_COLUMNS = frozenset({"is_known", "is_forward_filled"})


def decimal_or_none(v: Any) -> Optional[Decimal]:
    if v is None or v == "":
        return None
    if isinstance(v, Decimal):
        return v
    # An int from JSON (a price of 1) or text: through str, so no float ever stands in between.
    return Decimal(str(v))


def utc_times(values: Sequence[Any]):
    """Unix ms (ints or digit strings) or ISO 8601 texts, None / '' as NaT → datetime64[ns, UTC]."""
    pd = pandas()
    clean = [None if v is None or v == "" else v for v in values]
    present = [v for v in clean if v is not None]
    if present and all(isinstance(v, int) or (isinstance(v, str) and v.isdigit()) for v in present):
        ms = pd.array([None if v is None else int(v) for v in clean], dtype="Int64")
        return pd.Series(pd.to_datetime(ms, unit="ms", utc=True))
    return pd.Series(pd.to_datetime(pd.Series(clean, dtype=object), utc=True))


def typed_frame(columns: Sequence[str], rows: Dict[str, List[Any]]):
    """A DataFrame of the given columns, each converted by its name's type (see the module doc)."""
    pd = pandas()
    out = {}
    for c in columns:
        values = rows.get(c, [])
        if c in _TIME_COLUMNS:
            out["as_of" if c == "as_of_ms" else c] = utc_times(values)
        elif c in _DECIMAL_COLUMNS or c in _SUMMARY_DECIMALS:
            out[c] = pd.Series([decimal_or_none(v) for v in values], dtype=object)
        elif c in _INT_COLUMNS:
            out[c] = pd.Series(pd.array([None if v is None or v == "" else int(v) for v in values], dtype="Int64"))
        elif c in _BOOL_COLUMNS:
            out[c] = pd.Series([v if isinstance(v, bool) else str(v).lower() == "true" for v in values], dtype=bool)
        else:
            out[c] = pd.Series([None if v is None or v == "" else v for v in values], dtype=object)
    return pd.DataFrame(out)


def csv_columns(texts: Iterable[str], keep: Optional[Callable[[Dict[str, str]], bool]] = None):
    """Columns of the API's CSV pages: the first page's header, then every page's rows.

    Each page repeats the header row; ``keep(row_dict)`` may drop rows (an asset filter).
    """
    header: Optional[List[str]] = None
    cols: Dict[str, List[Any]] = {}
    for text in texts:
        reader = csv.reader(io.StringIO(text, newline=""))
        page_header = next(reader, None)
        if page_header is None:
            continue
        if header is None:
            header = page_header
            cols = {c: [] for c in header}
        for row in reader:
            if not row:
                continue
            if keep is not None and not keep(dict(zip(header, row))):
                continue
            for c, v in zip(header, row):
                cols[c].append(v)
    return header or [], cols


def summary_frame(buckets: Sequence[Dict[str, Any]]):
    """Summary buckets, each OHLC flattened into four columns (``best_bid_open``, …)."""
    cols: Dict[str, List[Any]] = {c: [] for c in SUMMARY_COLUMNS}
    for b in buckets:
        for c in SUMMARY_COLUMNS[:9]:
            cols[c].append(b.get(c))
        for f in OHLC_FIELDS:
            o = b.get(f"{f}_ohlc") or {}
            for p in ("open", "high", "low", "close"):
                cols[f"{f}_{p}"].append(o.get(p))
    return typed_frame(SUMMARY_COLUMNS, cols)


def book_frame(book: Dict[str, Any]):
    """A book's levels as long rows: ``side`` (bid / ask, or yes / no), ``level`` (0 = best), price, size."""
    sides = (("bid", "bids"), ("ask", "asks")) if "bids" in book else (("yes", "yes"), ("no", "no"))
    cols: Dict[str, List[Any]] = {c: [] for c in ("timestamp", "as_of_ms", "is_known", "side", "level", "price", "size")}
    for side, key in sides:
        for i, lvl in enumerate(book.get(key) or []):
            for c, v in (("timestamp", book.get("timestamp")), ("as_of_ms", book.get("as_of_ms")), ("is_known", book.get("is_known")), ("side", side), ("level", i), ("price", lvl.get("price")), ("size", lvl.get("size"))):
                cols[c].append(v)
    return typed_frame(list(cols), cols)


def coverage_frame(days: Sequence[Dict[str, Any]]):
    """One row per UTC day: status, records, first / last event, gap count and the checks."""
    pd = pandas()
    check_names: List[str] = []
    for d in days:
        for k in (d.get("checks") or {}):
            if k not in check_names:
                check_names.append(k)
    frame = pd.DataFrame({
        "date": pd.Series([pd.Timestamp(d["date"], tz="UTC") for d in days], dtype="datetime64[ns, UTC]"),
        "status": pd.Series([d.get("status") for d in days], dtype=object),
        "events": pd.Series(pd.array([d.get("events") for d in days], dtype="Int64")),
        "first_event": utc_times([d.get("first_event_ms") for d in days]),
        "last_event": utc_times([d.get("last_event_ms") for d in days]),
        "gaps": pd.Series(pd.array([len(d.get("gaps") or []) for d in days], dtype="Int64")),
        "checks_complete": pd.Series([bool(d.get("checks_complete")) for d in days], dtype=bool),
    })
    for k in check_names:
        vals = [(d.get("checks") or {}).get(k) for d in days]
        frame[k] = utc_times(vals) if k.endswith("_ms") and k != "unknown_book_ms" else pd.Series(pd.array(vals, dtype="Int64"))
    return frame


def gaps_frame(days: Sequence[Dict[str, Any]]):
    """Every gap of a coverage answer: its day, kind, start, end, length and detail."""
    pd = pandas()
    gaps = [(d["date"], g) for d in days for g in (d.get("gaps") or [])]
    return pd.DataFrame({
        "date": pd.Series([pd.Timestamp(day, tz="UTC") for day, _ in gaps], dtype="datetime64[ns, UTC]"),
        "kind": pd.Series([g.get("kind") for _, g in gaps], dtype=object),
        "start": utc_times([g.get("start_ms") for _, g in gaps]),
        "end": utc_times([g.get("end_ms") for _, g in gaps]),
        "duration": pd.Series([pd.Timedelta(milliseconds=g["end_ms"] - g["start_ms"]) for _, g in gaps], dtype="timedelta64[ns]"),
        "detail": pd.Series([g.get("detail") for _, g in gaps], dtype=object),
    })
