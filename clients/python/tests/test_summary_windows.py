"""Cutting a long summary window (or coverage range) into answers within the API's limits."""
import random
import unittest

import datetime as dt

from booktape.client import date_windows, summary_windows


def buckets(start, end, r):
    first = -(-start // r) * r
    return list(range(first, (end // r) * r + 1, r)) if (end // r) * r >= first else []


class SummaryWindows(unittest.TestCase):
    def test_the_parts_hold_exactly_the_buckets_of_the_whole_each_within_the_limit(self):
        rng = random.Random(26)
        for _ in range(2000):
            res = rng.choice([1, 5, 60, 3600, rng.randint(1, 3600)])
            limit = rng.randint(1, 50)
            start = rng.randint(0, 10**12)
            end = start + rng.randint(-5000, res * 1000 * limit * rng.randint(1, 6))
            with self.subTest(start=start, end=end, res=res, limit=limit):
                parts = summary_windows(start, end, res, limit)
                got = [b for a, z in parts for b in buckets(a, z, res * 1000)]
                self.assertEqual(got, buckets(start, end, res * 1000))
                self.assertTrue(all(len(buckets(a, z, res * 1000)) <= limit for a, z in parts) or len(parts) == 1 and start > end)
                self.assertEqual((parts[0][0], parts[-1][1]), (start, end))

    def test_what_fits_or_what_the_api_will_refuse_is_one_window(self):
        self.assertEqual(summary_windows(0, 86_399_999, 1), [(0, 86_399_999)])
        self.assertEqual(len(summary_windows(0, 2 * 86_400_000 - 1, 1)), 2)
        for bad in [0, 3601, "60", 1.5, None]:
            self.assertEqual(summary_windows(0, 10**12, bad), [(0, 10**12)])


class DateWindows(unittest.TestCase):
    def test_consecutive_ranges_of_at_most_the_limit_cover_every_day_once(self):
        rng = random.Random(31)
        for _ in range(500):
            first = dt.date(2026, 1, 1) + dt.timedelta(days=rng.randint(0, 400))
            last = first + dt.timedelta(days=rng.randint(0, 200))
            limit = rng.randint(1, 40)
            parts = date_windows(first.isoformat(), last.isoformat(), limit)
            days = [dt.date.fromisoformat(a) + dt.timedelta(days=i) for a, b in parts for i in range((dt.date.fromisoformat(b) - dt.date.fromisoformat(a)).days + 1)]
            self.assertEqual(days, [first + dt.timedelta(days=i) for i in range((last - first).days + 1)])
            self.assertTrue(all((dt.date.fromisoformat(b) - dt.date.fromisoformat(a)).days < limit for a, b in parts))

    def test_a_reversed_range_goes_to_the_api_as_given(self):
        self.assertEqual(date_windows("2026-03-02", "2026-03-01"), [("2026-03-02", "2026-03-01")])
