"""What the tests share: the API fixture written by python-client.int.test.ts, and skips.

Tests against the API skip themselves unless BOOKTAPE_TEST_FIXTURE names the fixture file
(npm test sets it); tests that build frames skip themselves when pandas is not installed.
"""
import json
import os
import unittest

FIXTURE_PATH = os.environ.get("BOOKTAPE_TEST_FIXTURE")
FIXTURE = None
if FIXTURE_PATH:
    with open(FIXTURE_PATH, encoding="utf-8") as f:
        FIXTURE = json.load(f)

try:
    import pandas  # noqa: F401

    HAS_PANDAS = True
except ImportError:
    HAS_PANDAS = False

needs_api = unittest.skipUnless(FIXTURE, "no API to test against: BOOKTAPE_TEST_FIXTURE is unset (npm test runs these through clients/python/tests/python-client.int.test.ts)")
needs_pandas = unittest.skipUnless(HAS_PANDAS, "pandas is not installed (apt-get install python3-pandas, or pip install pandas)")


def long_rows_a(records):
    """The API's exchange A long format built from JSON records: an independent statement of
    docs/api.md "Formats", to check the frames against."""
    out = []
    for r in records:
        base = (int(r["timestamp"]), r["asset_id"], r["event_type"])
        n = len(out)
        for lvl in r.get("bids") or []:
            out.append((*base, "bid", lvl["price"], lvl["size"], r["hash"], r["received_at"]))
        for lvl in r.get("asks") or []:
            out.append((*base, "ask", lvl["price"], lvl["size"], r["hash"], r["received_at"]))
        for c in r.get("changes") or []:
            out.append((*base, {"BUY": "bid", "SELL": "ask"}[c["side"]], c["price"], c["size"], r["hash"], r["received_at"]))
        if len(out) == n:
            out.append((*base, None, None, None, r["hash"], r["received_at"]))
    return out
