"""The client against the real API (started by python-client.int.test.ts, which writes the
fixture: what it stored, keys, and apps with tight plans)."""
import datetime as dt
import gzip
import os
import tempfile
import threading
import time
import unittest
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

from booktape import AuthenticationError, BadRequestError, Client, QuotaError

from .support import FIXTURE, long_rows_a, needs_api, needs_pandas

F = FIXTURE or {}
UTC = dt.timezone.utc


def query(url):
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


@needs_api
class Raw(unittest.TestCase):
    def test_client_from_the_environment_walks_every_cursor_page(self):
        c = Client()  # BOOKTAPE_API_URL, BOOKTAPE_API_KEY
        got = list(c.raw("polymarket", F["market_a"], F["day1_ms"], F["day2_ms"] + 86_399_999, page_size=7))
        self.assertEqual(got, F["expected_a"])
        self.assertEqual(len(got), 47)
        # 47 records, 7 a page: 7 requests, every one after the first with the previous cursor.
        self.assertEqual(len(c.requests), 7)
        self.assertNotIn("cursor", query(c.requests[0][0]))
        self.assertTrue(all(query(u)["cursor"].startswith("v1.") for u, _ in c.requests[1:]))
        b = list(Client().raw("kalshi", F["ticker_b"].lower(), F["day1_ms"] // 1000, F["day2_ms"] // 1000, page_size=4))
        self.assertEqual(b, F["expected_b"])

    def test_venue_names_and_every_form_of_a_window_answer_the_same(self):
        c = Client()
        day2 = dt.date(2026, 3, 2)
        forms = [
            ("exchange-a", "2026-03-02", "2026-03-02"),
            ("polymarket", day2, day2),
            ("a", dt.datetime(2026, 3, 2, tzinfo=UTC), "2026-03-02T23:59:59.999Z"),
            ("polymarket", F["day2_ms"] // 1000, F["day2_ms"] // 1000 + 86_399),
        ]
        want = [r for r in F["expected_a"] if int(r["timestamp"]) >= F["day2_ms"]]
        self.assertEqual(len(want), 4)
        for venue, start, end in forms:
            with self.subTest(venue=venue, start=start, end=end):
                self.assertEqual(list(c.raw(venue, F["market_a"], start, end)), want)

    def test_an_end_in_whole_seconds_covers_its_last_second(self):
        late = F["late_ms"]  # 999 ms into its second
        c = Client()
        second = late // 1000
        for end in [second, str(second), dt.datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")]:
            with self.subTest(end=end):
                got = list(c.raw("polymarket", F["market_a"], second, end))
                self.assertEqual([int(r["timestamp"]) for r in got], [late])
        # An aware datetime is an instant: the second's first millisecond, so the event is after it.
        self.assertEqual(list(c.raw("polymarket", F["market_a"], second, dt.datetime.fromtimestamp(second, UTC))), [])

    def test_asset_id_keeps_one_outcome_token(self):
        c = Client()
        got = list(c.raw("polymarket", F["market_a"], "2026-03-01", "2026-03-01", asset_id=F["other_asset_a"]))
        self.assertEqual([r["hash"] for r in got], ["py-other-book", "py-other-pc"])
        with self.assertRaises(BadRequestError) as e:
            c.raw("kalshi", F["ticker_b"], "2026-03-01", "2026-03-01", asset_id="1")
        self.assertEqual(e.exception.param, "asset_id")

    def test_iteration_is_lazy_breaking_out_stops_the_requests(self):
        c = Client()
        r = c.raw("polymarket", F["market_a"], "2026-03-01", "2026-03-02", page_size=5)
        self.assertEqual(c.requests, [])
        for i, _ in enumerate(r):
            if i == 6:
                break
        self.assertEqual(len(c.requests), 2)

    def test_markets_and_date_range(self):
        c = Client()
        self.assertEqual(list(c.markets("polymarket", page_size=2)), sorted([F["market_a"], *F["other_markets_a"]]))
        self.assertEqual(len(c.requests), 2)
        self.assertEqual(list(c.markets("kalshi", prefix="kxpy")), [F["ticker_b"]])
        self.assertEqual(c.date_range("kalshi", F["ticker_b"])["start_date"], "2026-03-01")


@needs_api
@needs_pandas
class RawFrames(unittest.TestCase):
    def test_exchange_a_frame_is_the_long_format_typed_over_link_pages(self):
        import pandas as pd

        c = Client()
        df = c.raw("polymarket", F["market_a"], "2026-03-01", "2026-03-02", page_size=9).to_df()
        # 47 records over 9-record CSV pages: 6 requests, each after the first from the Link header.
        self.assertEqual(len(c.requests), 6)
        self.assertEqual(list(df.columns), ["timestamp", "asset_id", "event_type", "side", "price", "size", "hash", "received_at"])
        self.assertEqual(str(df["timestamp"].dtype), "datetime64[ns, UTC]")
        self.assertEqual(str(df["received_at"].dtype), "datetime64[ns, UTC]")
        self.assertTrue(all(isinstance(v, Decimal) for v in df["price"]))
        want = long_rows_a(F["expected_a"])
        self.assertEqual(len(df), len(want))
        got = [
            (int(r.timestamp.value // 1_000_000), r.asset_id, r.event_type, r.side, None if r.price is None else str(r.price), None if r.size is None else str(r.size), r.hash, r.received_at)
            for r in df.itertuples()
        ]
        self.assertEqual([g[:7] for g in got], [w[:7] for w in want])
        self.assertEqual([g[7] for g in got], [pd.Timestamp(w[7]) for w in want])
        # The book's levels exactly as the venue wrote them (decimal text kept).
        first = df[df.event_type == "book"].iloc[0]
        self.assertEqual((first["side"], first["price"], first["size"]), ("bid", Decimal("0.01"), Decimal("1200.5")))
        self.assertEqual(df["timestamp"].iloc[0], pd.Timestamp(F["day1_ms"] + 3_600_000, unit="ms", tz="UTC"))

    def test_an_empty_window_is_an_empty_frame_with_the_columns_typed(self):
        df = Client().raw("polymarket", F["market_a"], "2026-03-05", "2026-03-05").to_df()
        self.assertEqual((len(df), list(df.columns)[:3]), (0, ["timestamp", "asset_id", "event_type"]))
        self.assertEqual(str(df["timestamp"].dtype), "datetime64[ns, UTC]")

    def test_exchange_b_frame_keeps_trailing_zeros_and_types_sequence_numbers(self):
        df = Client().raw("kalshi", F["ticker_b"], "2026-03-01", "2026-03-01").to_pandas()
        self.assertEqual(list(df.columns), ["timestamp", "ticker", "type", "side", "price", "size", "delta", "seq", "sid", "expected_seq", "received_at", "data"])
        self.assertEqual(str(df["seq"].dtype), "Int64")
        snap = df[df.type == "snapshot"]
        self.assertEqual(list(snap.price), [Decimal("0.4100"), Decimal("0.4200"), Decimal("0.5500")])
        self.assertEqual(str(snap.price.iloc[0]), "0.4100")
        deltas = df[df.type == "delta"]
        self.assertEqual(len(deltas), 30)
        self.assertEqual(set(map(str, deltas.delta)), {"-5.00", "7.50"})
        self.assertTrue(deltas["size"].isna().all())
        self.assertEqual(sum(deltas.delta), Decimal("-5.00") * 15 + Decimal("7.50") * 15)


@needs_api
class Summaries(unittest.TestCase):
    def test_summary_buckets_with_exact_decimals(self):
        c = Client()
        s = c.summary("polymarket", F["market_a"], "2026-03-01", "2026-03-01", 600, asset_id=F["asset_a"])
        self.assertEqual((s["asset_id"], s["resolution_seconds"]), (F["asset_a"], 600))
        self.assertEqual(s.data[0]["timestamp"], F["day1_ms"] + 3_600_000)
        self.assertEqual(len(s), 138)
        self.assertIsInstance(s.data[0]["best_bid"], Decimal)
        w = c.summary("kalshi", F["ticker_b"], F["day1_ms"] + 7_200_000, F["day1_ms"] + 10_800_000 - 1, 60)
        self.assertEqual(len(w), 60)
        self.assertEqual((w.data[0]["best_bid"], w.data[0]["quote_count"]), (Decimal("0.42"), 1))

    def test_a_window_beyond_one_answer_is_asked_in_parts_and_joined_exactly(self):
        whole = Client().summary("polymarket", F["market_a"], "2026-03-01", "2026-03-02", 60, asset_id=F["asset_a"])
        self.assertEqual(len(whole), 2 * 1440 - 60)  # from the first book at 01:00
        c = Client()
        c._max_buckets = 500  # the API's limit is 100,000; a small one makes parts of a cheap window
        parts = c.summary("polymarket", F["market_a"], "2026-03-01", "2026-03-02", 60, asset_id=F["asset_a"])
        self.assertEqual(len(c.requests), 6)
        self.assertEqual(parts.data, whole.data)
        self.assertEqual(parts["data_points"], len(whole))

    def test_exchange_a_summaries_need_the_outcome_token(self):
        with self.assertRaises(BadRequestError) as e:
            Client().summary("polymarket", F["market_a"], "2026-03-01", "2026-03-01", 600)
        self.assertEqual((e.exception.status, e.exception.param), (400, "asset_id"))

    @needs_pandas
    def test_summary_frame_equals_the_api_csv_exactly(self):
        import csv
        import io

        c = Client()
        s = c.summary("polymarket", F["market_a"], "2026-03-01", "2026-03-01", 600, asset_id=F["asset_a"])
        df = s.to_df()
        self.assertEqual(str(df["timestamp"].dtype), "datetime64[ns, UTC]")
        self.assertEqual(str(df["quote_count"].dtype), "Int64")
        self.assertEqual(str(df["is_forward_filled"].dtype), "bool")
        url = c._t.url("/api/v1/exchange-a/market/orderbook-summary", [("condition_id", F["market_a"]), ("asset_id", F["asset_a"]), ("date", "2026-03-01"), ("resolution", "600"), ("format", "csv")])
        rows = list(csv.DictReader(io.StringIO(c._t.get(url, accept="text/csv").text())))
        self.assertEqual(list(df.columns), list(rows[0].keys()))
        self.assertEqual(len(df), len(rows))
        for (_, got), want in zip(df.iterrows(), rows):
            for col, text in want.items():
                v = got[col]
                if col == "timestamp":
                    self.assertEqual(v.value // 1_000_000, int(text))
                elif col == "is_forward_filled":
                    self.assertEqual(v, text == "true")
                elif text == "":
                    self.assertTrue(v is None or v is getattr(__import__("pandas"), "NA"), (col, v))
                elif col == "quote_count":
                    self.assertEqual(v, int(text))
                else:
                    self.assertEqual(v, Decimal(text), col)
                    self.assertIsInstance(v, Decimal)


@needs_api
class Books(unittest.TestCase):
    def test_book_at_an_instant_on_both_venues(self):
        c = Client()
        a = c.book("polymarket", F["market_a"], dt.datetime.fromtimestamp((F["day1_ms"] + 3_600_000) / 1000, UTC), depth=5, asset_id=F["asset_a"])
        self.assertEqual((a["is_known"], a["as_of_ms"]), (True, F["day1_ms"] + 3_600_000))
        self.assertEqual(a["bids"][0], {"price": "0.48", "size": "30"})
        b = c.book("kalshi", F["ticker_b"], F["day1_ms"] + 7_200_000)
        self.assertEqual(b["yes"][0], {"price": "0.42", "size": "15"})
        # An exchange A book is an outcome token's: without asset_id it is refused before asking.
        with self.assertRaises(BadRequestError) as e:
            c.book("polymarket", F["market_a"], F["day1_ms"])
        self.assertEqual((e.exception.param, e.exception.status), ("asset_id", None))

    @needs_pandas
    def test_book_frame(self):
        df = Client().book("kalshi", F["ticker_b"], "2026-03-01T02:00:00Z").to_df()
        self.assertEqual(list(df.columns), ["timestamp", "as_of", "is_known", "side", "level", "price", "size"])
        self.assertEqual(list(zip(df.side, df.level, df.price)), [("yes", 0, Decimal("0.42")), ("yes", 1, Decimal("0.41")), ("no", 0, Decimal("0.55"))])
        self.assertEqual(str(df["as_of"].dtype), "datetime64[ns, UTC]")


@needs_api
class CoverageAndExport(unittest.TestCase):
    def test_coverage_per_day(self):
        cov = Client().coverage("polymarket", F["market_a"], "2026-03-01", dt.date(2026, 3, 3))
        self.assertEqual([(d["date"], d["events"]) for d in cov], [("2026-03-01", 43), ("2026-03-02", 4), ("2026-03-03", 0)])
        self.assertFalse(cov.trustworthy)

    def test_a_range_beyond_one_answer_is_asked_in_parts_and_joined(self):
        whole = Client().coverage("polymarket", F["market_a"], "2026-03-01", "2026-03-05")
        c = Client()
        c._max_coverage_days = 2  # the API's limit is 31 days; a small one makes parts of a short range
        parts = c.coverage("polymarket", F["market_a"], "2026-03-01", "2026-03-05")
        self.assertEqual(len(c.requests), 3)
        self.assertEqual([d["date"] for d in parts], ["2026-03-0%d" % i for i in range(1, 6)])
        strip = lambda days: [{k: v for k, v in d.items() if k != "gaps"} for d in days]  # an open gap ends at the time of the answer
        self.assertEqual(strip(parts.data), strip(whole.data))
        self.assertEqual((parts["start_date"], parts["end_date"]), ("2026-03-01", "2026-03-05"))
        # Longer than 31 days in one call: parts, not a 400.
        self.assertEqual(len(Client().coverage("kalshi", F["ticker_b"], "2026-03-01", "2026-05-15").data), 76)

    @needs_pandas
    def test_coverage_frame(self):
        df = Client().coverage("kalshi", F["ticker_b"], "2026-03-01", "2026-03-02").to_df()
        self.assertIn(df.status.iloc[0], ("complete", "partial"))
        self.assertEqual(df.status.iloc[1], "missing")
        self.assertEqual(str(df["first_event"].dtype), "datetime64[ns, UTC]")
        self.assertEqual(list(df.events), [31, 0])
        self.assertEqual(len(Client().coverage("kalshi", F["ticker_b"], "2026-03-01", "2026-03-02").gaps_df()), 0)

    def test_export_writes_the_file_under_the_api_name(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("BOOKTAPE_TEST_TMP")) as d:
            e = Client().export("polymarket", F["market_a"], "2026-03-01", "2026-03-02", d)
            self.assertEqual(e.days, 2)
            self.assertRegex(e.filename, r"^0x0071c0ffee.*_2026-03-01_2026-03-02_raw\.csv\.gz$")
            self.assertEqual(e.path, os.path.join(d, e.filename))
            with gzip.open(e.path, "rt") as f:
                self.assertEqual(f.readline().strip(), "timestamp,asset_id,event_type,side,price,size,hash,received_at")
            self.assertEqual(os.path.getsize(e.path), e.size)
            self.assertEqual(sorted(os.listdir(d)), [e.filename])  # no temporary file left
            p = Client().export("kalshi", F["ticker_b"], "2026-03-01", "2026-03-01", os.path.join(d, "b.parquet"), kind="summary", resolution=3600, format="parquet")
            with open(p.path, "rb") as f:
                self.assertEqual(f.read(4), b"PAR1")

    def test_a_refused_export_leaves_no_file(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("BOOKTAPE_TEST_TMP")) as d:
            with self.assertRaises(BadRequestError) as e:
                Client().export("polymarket", F["market_a"], "2026-03-01", "2026-04-15", d)
            self.assertEqual((e.exception.status, e.exception.param), (400, "end_date"))
            self.assertEqual(os.listdir(d), [])

    @needs_pandas
    def test_a_summary_export_reads_back_as_the_summary_frame(self):
        c = Client()
        with tempfile.TemporaryDirectory(dir=os.environ.get("BOOKTAPE_TEST_TMP")) as d:
            df = c.export("polymarket", F["market_a"], "2026-03-01", "2026-03-01", d, kind="summary", resolution=600).to_df()
        self.assertEqual(set(df.asset_id), {F["asset_a"], F["other_asset_a"]})
        mine = df[df.asset_id == F["asset_a"]].drop(columns="asset_id").reset_index(drop=True)
        want = c.summary("polymarket", F["market_a"], "2026-03-01", "2026-03-01", 600, asset_id=F["asset_a"]).to_df()
        self.assertEqual(list(mine.dtypes.astype(str)), list(want.dtypes.astype(str)))
        self.assertTrue(mine.equals(want))

    @needs_pandas
    def test_a_csv_export_reads_back_as_the_raw_frame(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("BOOKTAPE_TEST_TMP")) as d:
            e = Client().export("kalshi", F["ticker_b"], "2026-03-01", "2026-03-01", d)
            from_file = e.to_df()
        from_pages = Client().raw("kalshi", F["ticker_b"], "2026-03-01", "2026-03-01").to_df()
        self.assertTrue(from_file.equals(from_pages))


@needs_api
class Errors(unittest.TestCase):
    def test_bad_parameters_raise_bad_request_with_code_param_status(self):
        with self.assertRaises(BadRequestError) as e:
            Client().book("kalshi", F["ticker_b"], F["day1_ms"], depth=501)
        self.assertEqual((e.exception.status, e.exception.code, e.exception.param), (400, "invalid_parameter", "depth"))
        self.assertIn("depth", e.exception.message)
        with self.assertRaises(BadRequestError) as e:
            list(Client().raw("polymarket", F["market_a"], "2026-01-01", "2026-01-02"))  # before the data floor
        self.assertEqual((e.exception.status, e.exception.param), (400, "start_timestamp"))

    def test_wrong_arguments_are_refused_before_any_request(self):
        c = Client()
        for call in [
            lambda: c.raw("binance", "x", 1, 2),
            lambda: c.raw("polymarket", F["market_a"], dt.datetime(2026, 3, 1), dt.datetime(2026, 3, 2)),
            lambda: c.raw("polymarket", F["market_a"], "2026-03-02", "2026-03-01"),
            lambda: c.raw("polymarket", "", 1, 2),
        ]:
            with self.assertRaises(BadRequestError) as e:
                call()
            self.assertIsNone(e.exception.status)
        self.assertEqual(c.requests, [])

    def test_an_unknown_key_is_401_a_revoked_one_403_neither_retried(self):
        c = Client(api_key="bt_live_not-a-real-key")
        with self.assertRaises(AuthenticationError) as e:
            c.date_range("kalshi", F["ticker_b"])
        self.assertEqual((e.exception.status, e.exception.code), (401, "unauthorized"))
        self.assertEqual(len(c.requests), 1)
        with self.assertRaises(AuthenticationError) as e:
            Client(api_key=F["revoked_key"]).date_range("kalshi", F["ticker_b"])
        self.assertEqual((e.exception.status, e.exception.code), (403, "forbidden"))


def at_start_of_a_second():
    while time.time() % 1 > 0.1:
        time.sleep(0.005)


@needs_api
class RateLimits(unittest.TestCase):
    def test_three_calls_at_once_at_one_a_second_wait_the_429s_out(self):
        c = Client(F["limited_url"], F["burst_keys"][0])
        c.date_range("kalshi", F["ticker_b"])  # warm: plan and key cached
        at_start_of_a_second()
        started = time.monotonic()
        answers = []
        threads = [threading.Thread(target=lambda: answers.append(c.date_range("kalshi", F["ticker_b"]))) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([a["has_data"] for a in answers], [True] * 3)
        statuses = [s for _, s in c.requests[1:]]
        self.assertEqual(statuses.count(200), 3)
        self.assertGreaterEqual(statuses.count(429), 1)
        self.assertEqual(set(statuses) - {200, 429}, set())
        self.assertGreaterEqual(time.monotonic() - started, 0.9)

    def test_without_retries_left_the_429_is_a_quota_error_with_retry_after(self):
        c = Client(F["limited_url"], F["burst_keys"][1], max_retries=0)
        c.date_range("kalshi", F["ticker_b"])
        at_start_of_a_second()
        errors = []

        def call():
            try:
                c.date_range("kalshi", F["ticker_b"])
            except QuotaError as e:
                errors.append(e)

        threads = [threading.Thread(target=call) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertGreaterEqual(len(errors), 1)
        e = errors[0]
        self.assertEqual((e.status, e.code, e.retry_after), (429, "rate_limited", 1.0))
        self.assertEqual((e.quota["limit"], e.quota["allowed"]), ("per_second", 1))

    def test_a_monthly_quota_used_up_is_raised_at_once(self):
        c = Client(F["monthly_url"], F["monthly_key"])
        c.date_range("polymarket", F["market_a"])
        started = time.monotonic()
        with self.assertRaises(QuotaError) as e:
            c.date_range("polymarket", F["market_a"])
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertGreater(e.exception.retry_after, 60)
        self.assertEqual(e.exception.quota["limit"], "monthly")


if __name__ == "__main__":
    unittest.main()


@needs_api
class ReplayStream(unittest.TestCase):
    def test_one_stream_of_both_venues_in_time_order_normalised(self):
        c = Client()
        start, end = F["day1_ms"], F["day1_ms"] + 86_399_999
        got = list(c.replay_stream([f"polymarket:{F['asset_a']}", f"kalshi:{F['ticker_b'].lower()}"], start, end))
        self.assertEqual(got[0]["type"], "start")
        self.assertEqual(got[0]["markets"], [f"exchange-a:{F['asset_a']}", f"exchange-b:{F['ticker_b']}"])
        self.assertEqual(got[-1], {"type": "end", "ts": end, "messages": len(got) - 2})
        # Opening books at the window's start: nothing stored before it.
        self.assertEqual([(m["type"], m.get("opening"), m["known"]) for m in got[1:3]], [("book", True, False), ("book", True, False)])
        body = [m for m in got[3:-1]]
        kind_a = {"book": "book", "price_change": "book_change"}
        want = [(int(r["timestamp"]), "exchange-a", kind_a[r["event_type"]]) for r in F["expected_a"] if r["asset_id"] == F["asset_a"] and start <= int(r["timestamp"]) <= end]
        want += [(r["epoch_ms"], "exchange-b", "book" if r["type"] == "snapshot" else "book_change") for r in F["expected_b"] if start <= r["epoch_ms"] <= end]
        want.sort()
        self.assertEqual([(m["ts"], m["venue"], m["type"]) for m in body], want)
        # Exchange B as the YES book: NO bids are asks at 1 - price; a delta gives the level's new size.
        b = [m for m in body if m["venue"] == "exchange-b"]
        self.assertEqual((b[0]["bids"], b[0]["asks"]), ([["0.42", "15"], ["0.41", "120"]], [["0.45", "40"]]))
        self.assertEqual(b[1]["changes"], [{"side": "bid", "price": "0.42", "size": "22.5"}])
        self.assertTrue(all(m["ingest_seq"] is not None and m["received_at"] is not None for m in body))

    def test_bad_markets_raise_bad_request_and_leaving_early_ends_the_request(self):
        c = Client()
        with self.assertRaises(BadRequestError) as e:
            next(c.replay_stream(["nasdaq:AAPL"], F["day1_ms"], F["day1_ms"] + 1000))
        self.assertEqual((e.exception.status, e.exception.param), (400, "markets"))
        it = c.replay_stream([f"kalshi:{F['ticker_b']}"], F["day1_ms"], F["day1_ms"] + 86_399_999)
        self.assertEqual(next(it)["type"], "start")
        it.close()
