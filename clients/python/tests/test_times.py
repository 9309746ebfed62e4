"""The time rules (booktape.times): every form of a time, and what an end covers."""
import datetime as dt
import unittest
from zoneinfo import ZoneInfo

from booktape import BadRequestError, date_text, time_ms

UTC = dt.timezone.utc
T = 1772409599  # 2026-03-01T23:59:59Z


class TimeMs(unittest.TestCase):
    def test_every_form_of_one_instant_as_a_start_is_the_same_millisecond(self):
        forms = [
            T, T * 1000, str(T), str(T * 1000),
            dt.datetime(2026, 3, 1, 23, 59, 59, tzinfo=UTC),
            dt.datetime(2026, 3, 2, 0, 59, 59, tzinfo=dt.timezone(dt.timedelta(hours=1))),
            dt.datetime(2026, 3, 1, 18, 59, 59, tzinfo=ZoneInfo("America/New_York")),
            "2026-03-01T23:59:59Z", "2026-03-01T23:59:59+00:00", "2026-03-02T00:59:59+01:00", "2026-03-01 23:59:59Z",
            "2026-03-02T00:59:59+0100", "2026-03-01T23:59:59.0Z", "2026-03-01T23:59:59,000000000z",
        ]
        for f in forms:
            with self.subTest(f=f):
                self.assertEqual(time_ms(f, "start"), T * 1000)

    def test_an_end_covers_the_whole_of_its_last_written_unit(self):
        self.assertEqual(time_ms(T, "end", end=True), T * 1000 + 999)  # seconds: the whole second
        self.assertEqual(time_ms(str(T), "end", end=True), T * 1000 + 999)
        self.assertEqual(time_ms(T * 1000, "end", end=True), T * 1000)  # ms: that millisecond
        self.assertEqual(time_ms("2026-03-01T23:59:59Z", "end", end=True), T * 1000 + 999)
        self.assertEqual(time_ms("2026-03-01T23:59Z", "end", end=True), (T - 59) * 1000 + 59_999)
        self.assertEqual(time_ms("2026-03-01T23:00Z", "end", end=True), (T - 3599) * 1000 + 59_999)
        self.assertEqual(time_ms("2026-03-01T23:59:59.5Z", "end", end=True), T * 1000 + 599)
        self.assertEqual(time_ms("2026-03-01T23:59:59.123Z", "end", end=True), T * 1000 + 123)
        self.assertEqual(time_ms("2026-03-01T23:59:59.123456Z", "end", end=True), T * 1000 + 123)
        # A date: the whole UTC day; a start the first millisecond.
        self.assertEqual(time_ms(dt.date(2026, 3, 1), "end", end=True), T * 1000 + 999)
        self.assertEqual(time_ms("2026-03-01", "end", end=True), T * 1000 + 999)
        self.assertEqual(time_ms("2026-03-01", "start"), (T - 86_399) * 1000)

    def test_a_datetime_is_an_instant_a_start_rounds_up_and_an_end_down(self):
        d = dt.datetime(2026, 3, 1, 23, 59, 59, 123_500, tzinfo=UTC)
        self.assertEqual(time_ms(d, "start"), T * 1000 + 124)
        self.assertEqual(time_ms(d, "end", end=True), T * 1000 + 123)
        exact = dt.datetime(2026, 3, 1, 23, 59, 59, 123_000, tzinfo=UTC)
        self.assertEqual(time_ms(exact, "start"), time_ms(exact, "end", end=True))
        before = dt.datetime(1969, 12, 31, 23, 59, 59, 999_500, tzinfo=UTC)
        self.assertEqual(time_ms(before, "end", end=True), -1)

    def test_seconds_and_milliseconds_are_told_apart_at_ten_to_the_eleven(self):
        self.assertEqual(time_ms(10**11 - 1, "start"), (10**11 - 1) * 1000)
        self.assertEqual(time_ms(10**11, "start"), 10**11)

    def test_numpy_integers_are_integers(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("numpy is not installed (it comes with pandas)")
        self.assertEqual(time_ms(np.int64(T), "start"), T * 1000)

    def test_what_cannot_be_read_exactly_is_refused_with_the_parameter_named(self):
        for bad in [dt.datetime(2026, 3, 1), "2026-03-01T12:00:00", 1.5, float(T), True, -1, "yesterday", "2026-02-30", None, [T]]:
            with self.subTest(bad=bad):
                with self.assertRaises(BadRequestError) as e:
                    time_ms(bad, "start")
                self.assertEqual(e.exception.param, "start")
                self.assertIsNone(e.exception.status)
                self.assertIsInstance(e.exception, ValueError)

    def test_a_naive_datetime_names_the_fix(self):
        with self.assertRaises(BadRequestError) as e:
            time_ms(dt.datetime(2026, 3, 1), "end", end=True)
        self.assertIn("tzinfo=timezone.utc", e.exception.message)


class DateText(unittest.TestCase):
    def test_dates_in_every_form(self):
        # A datetime's UTC day: 20:00 in New York on 1 March is already 2 March in UTC.
        self.assertEqual(date_text(dt.datetime(2026, 3, 1, 20, tzinfo=ZoneInfo("America/New_York")), "d"), "2026-03-02")
        for f in [dt.date(2026, 3, 1), dt.datetime(2026, 3, 1, 23, 59, tzinfo=UTC), dt.datetime(2026, 3, 1, 18, tzinfo=ZoneInfo("America/New_York")), "2026-03-01", T, T * 1000, "2026-03-01T10:00:00Z"]:
            with self.subTest(f=f):
                self.assertEqual(date_text(f, "start_date"), "2026-03-01")

    def test_bad_dates_are_refused(self):
        for bad in ["2026-13-01", "03/01/2026", dt.datetime(2026, 3, 1), None]:
            with self.subTest(bad=bad):
                with self.assertRaises(BadRequestError) as e:
                    date_text(bad, "end_date")
                self.assertEqual(e.exception.param, "end_date")


if __name__ == "__main__":
    unittest.main()
