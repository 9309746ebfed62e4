"""Times and dates as the client takes them, turned into what the API reads: pure rules.

Every time goes out as Unix **milliseconds**, so the API never has to guess a unit, and the
rules below are the client's, written down once:

- ``datetime``: must be timezone-aware (a naive one is refused: a quant's naive datetime is
  as often local time as UTC, and guessing would silently move the window). It is an
  instant: a start is rounded up to the millisecond, an end down, so neither takes in an
  event outside what was asked.
- ``date`` (not a datetime), or an ISO string ``YYYY-MM-DD``: the UTC day. As a start, its
  first millisecond; as an end, its **last** (an end date covers the whole day).
- ``int`` (Python or numpy): Unix seconds below 10**11 (which is 5138-11-16 in seconds and
  1973-03-03 in milliseconds), milliseconds otherwise, the API's own rule. An end in seconds
  covers its whole second (``…599`` means up to ``…599.999``). Floats are refused: whether
  1772409599.0 is a second or an instant cannot be told.
- ``str``: digits alone are read as the int above; otherwise ISO 8601 with a zone
  (``2026-03-01T12:00:00Z``, ``…+01:00``), a naive one refused like a naive datetime. An end
  covers the whole of its last written unit: ``T23:59:59Z`` up to .999, ``T23:59Z`` up to
  59.999, ``T23:59:59.5Z`` up to .599.
- pandas ``Timestamp`` is a datetime and follows the datetime rules.

Dates (coverage, exports) go out as ``YYYY-MM-DD``: a ``date``, an aware ``datetime`` (its UTC
day), an ISO date string, or an int time (its UTC day).
"""
from __future__ import annotations

import datetime as dt
import numbers
import re
from typing import Union

from .errors import bad_argument

TimeLike = Union[dt.datetime, dt.date, int, str]
DateLike = Union[dt.date, dt.datetime, int, str]

SECONDS_BELOW = 10**11
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MS = dt.timedelta(milliseconds=1)
_DAY_MS = 86_400_000
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# The time part of an ISO 8601 text: hours, then optional minutes, seconds and a fraction.
_TIME_RE = re.compile(r"[T ](\d{2})(?::?(\d{2}))?(?::?(\d{2}))?(?:[.,](\d+))?")


def _aware_ms(value: dt.datetime, param: str, end: bool) -> int:
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise bad_argument(param, f"{param}: a naive datetime ({value.isoformat()}) is refused; give it a zone, e.g. datetime(…, tzinfo=timezone.utc) or pandas.Timestamp(…, tz='UTC')")
    delta = value - _EPOCH
    # Floor for an end, ceiling for a start: a window never widens past what was asked.
    return delta // _MS if end else -((-delta) // _MS)


def _day_ms(day: dt.date) -> int:
    return (day - dt.date(1970, 1, 1)).days * _DAY_MS


def _int_ms(value: int, param: str, end: bool) -> int:
    if value < 0:
        raise bad_argument(param, f"{param}: {value} is before 1970")
    if value < SECONDS_BELOW:
        return value * 1000 + (999 if end else 0)
    return value


def _fromisoformat(text: str) -> dt.datetime:
    """datetime.fromisoformat as Python 3.11 reads ISO 8601, on 3.9 and 3.10 too: those take
    neither ``Z`` nor a fraction of other than 3 or 6 digits nor an offset without a colon."""
    t = re.sub(r"[Zz]$", "+00:00", text)
    t = re.sub(r"([+-]\d{2})(\d{2})$", r"\1:\2", t) if re.search(r"[T ]\d", t) else t
    t = re.sub(r"[.,](\d+)", lambda m: "." + (m.group(1) + "000000")[:6], t)
    return dt.datetime.fromisoformat(t)


def _iso_ms(text: str, param: str, end: bool) -> int:
    try:
        value = _fromisoformat(text)
    except ValueError:
        raise bad_argument(param, f"{param}: {text!r} is not a time: give Unix seconds or milliseconds, YYYY-MM-DD, or ISO 8601 with a zone (2026-03-01T12:00:00Z)") from None
    ms = _aware_ms(value, param, end)
    if not end:
        return ms
    m = _TIME_RE.search(text)
    if m is None:
        return ms
    _, minutes, seconds, fraction = m.groups()
    # An end covers the whole of the last unit written.
    if fraction is not None:
        cover = 10 ** max(0, 3 - len(fraction)) - 1
    elif seconds is not None:
        cover = 999
    elif minutes is not None:
        cover = 59_999
    else:
        cover = 3_599_999
    return ms + cover


def time_ms(value: TimeLike, param: str, *, end: bool = False) -> int:
    """Unix ms of a time given as a datetime, date, int or string (rules in the module doc)."""
    if isinstance(value, bool):
        raise bad_argument(param, f"{param}: a bool is not a time")
    if isinstance(value, dt.datetime):
        return _aware_ms(value, param, end)
    if isinstance(value, dt.date):
        return _day_ms(value) + (_DAY_MS - 1 if end else 0)
    if isinstance(value, numbers.Integral):
        return _int_ms(int(value), param, end)
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return _int_ms(int(text), param, end)
        if _DATE_RE.match(text):
            try:
                return time_ms(dt.date.fromisoformat(text), param, end=end)
            except ValueError:
                raise bad_argument(param, f"{param}: {text!r} is not a calendar date") from None
        return _iso_ms(text, param, end)
    if isinstance(value, numbers.Real):
        raise bad_argument(param, f"{param}: floats are refused (is {value!r} a second or an instant?); give an int of seconds or ms, or an aware datetime")
    raise bad_argument(param, f"{param}: {type(value).__name__} is not a time; give an aware datetime, a date, Unix seconds or ms, or an ISO 8601 string")


def date_text(value: DateLike, param: str) -> str:
    """``YYYY-MM-DD`` (UTC) of a date, an aware datetime, an ISO date string or an int time."""
    if isinstance(value, bool):
        raise bad_argument(param, f"{param}: a bool is not a date")
    if isinstance(value, dt.datetime):
        ms = _aware_ms(value, param, False)
        return (dt.date(1970, 1, 1) + dt.timedelta(days=ms // _DAY_MS)).isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, numbers.Integral):
        ms = _int_ms(int(value), param, False)
        return (dt.date(1970, 1, 1) + dt.timedelta(days=ms // _DAY_MS)).isoformat()
    if isinstance(value, str):
        text = value.strip()
        if _DATE_RE.match(text):
            try:
                return dt.date.fromisoformat(text).isoformat()
            except ValueError:
                raise bad_argument(param, f"{param}: {text!r} is not a calendar date") from None
        if text.isdigit():
            return date_text(int(text), param)
        try:
            return date_text(_fromisoformat(text), param)
        except ValueError:
            raise bad_argument(param, f"{param}: {text!r} is not a date (YYYY-MM-DD)") from None
    raise bad_argument(param, f"{param}: {type(value).__name__} is not a date; give YYYY-MM-DD or a datetime.date")
