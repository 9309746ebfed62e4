"""Retries, Retry-After, errors and paging rules of the transport, against a scripted local
HTTP server (the real API cannot be made to answer 503 on cue; the 429s of the real API are in
test_api.py)."""
import gzip
import json
import socket
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from booktape import AuthenticationError, BadRequestError, BooktapeError, Client, QuotaError, ServiceUnavailableError
from booktape.transport import RetryPolicy, next_link, parse_retry_after, retry_delay


class Scripted:
    """A local server answering each request with the next scripted (status, headers, body)."""

    def __init__(self, script):
        self.script = list(script)
        self.seen = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                outer.seen.append((self.path, dict(self.headers)))
                status, headers, body = outer.script.pop(0) if outer.script else (500, {}, b"script ran out")
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def err(code, message, param=None, **extra):
    return json.dumps({"error": {"code": code, "message": message, **({"param": param} if param else {})}, **extra}).encode()


def client(url, **kw):
    c = Client(url, "bt_live_test", **kw)
    waits = []
    c._t.sleep = waits.append
    return c, waits


BOOK = json.dumps({"ticker": "KX", "timestamp": 1, "as_of_ms": 1, "is_known": True, "yes": [{"price": "0.42", "size": "15"}], "no": []}).encode()


class Retries(unittest.TestCase):
    def serve(self, script):
        s = Scripted(script)
        self.addCleanup(s.close)
        return s

    def test_503_and_429_wait_what_retry_after_says_then_succeed(self):
        s = self.serve([(503, {"Retry-After": "1"}, err("service_unavailable", "down")), (429, {"Retry-After": "2"}, err("rate_limited", "slow")), (200, {"Content-Type": "application/json"}, BOOK)])
        c, waits = client(s.url)
        b = c.book("kalshi", "KX", 1)
        self.assertEqual(b.raw["yes"][0]["price"], "0.42")
        self.assertEqual(waits, [1.0, 2.0])
        self.assertEqual([st for _, st in c.requests], [503, 429, 200])

    def test_retries_are_bounded_and_the_last_refusal_is_raised_typed(self):
        s = self.serve([(503, {"Retry-After": "0"}, err("service_unavailable", "down"))] * 5)
        c, waits = client(s.url, max_retries=2)
        with self.assertRaises(ServiceUnavailableError) as e:
            c.book("kalshi", "KX", 1)
        self.assertEqual((e.exception.status, e.exception.code, e.exception.retry_after), (503, "service_unavailable", 0.0))
        self.assertEqual(len(s.seen), 3)
        self.assertEqual(waits, [0.0, 0.0])

    def test_a_retry_after_beyond_the_cap_is_raised_at_once_with_its_quota(self):
        quota = {"limit": "monthly", "allowed": 1, "retry_after_seconds": 86400}
        s = self.serve([(429, {"Retry-After": "86400"}, err("rate_limited", "monthly quota used", quota=quota))])
        c, waits = client(s.url)
        with self.assertRaises(QuotaError) as e:
            c.book("kalshi", "KX", 1)
        self.assertEqual(waits, [])
        self.assertEqual(e.exception.retry_after, 86400.0)
        self.assertEqual(e.exception.quota, quota)

    def test_without_retry_after_the_wait_is_jittered_exponential_back_off(self):
        s = self.serve([(503, {}, b"")] * 3 + [(200, {}, BOOK)])
        c, waits = client(s.url, retry_base_delay=0.5)
        c.book("kalshi", "KX", 1)
        self.assertEqual(len(waits), 3)
        for w, step in zip(waits, [0.5, 1.0, 2.0]):
            self.assertTrue(step / 2 <= w <= step, (w, step))

    def test_other_statuses_are_not_retried_and_map_to_their_class(self):
        cases = [
            (400, err("invalid_parameter", "depth must be at most 500", "depth"), BadRequestError, "invalid_parameter", "depth"),
            (401, err("unauthorized", "unknown API key"), AuthenticationError, "unauthorized", None),
            (403, err("forbidden", "revoked"), AuthenticationError, "forbidden", None),
            (502, b"<html>bad gateway</html>", BooktapeError, "http_error", None),
        ]
        for status, body, cls, code, param in cases:
            with self.subTest(status=status):
                s = self.serve([(status, {"X-Request-Id": "req-1"}, body)])
                c, waits = client(s.url)
                with self.assertRaises(cls) as e:
                    c.book("kalshi", "KX", 1)
                self.assertEqual((e.exception.status, e.exception.code, e.exception.param, e.exception.request_id), (status, code, param, "req-1"))
                self.assertEqual(len(s.seen), 1)
                self.assertEqual(waits, [])

    def test_no_answer_at_all_is_retried_then_raised(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()  # nothing listens there now
        c, waits = client(f"http://127.0.0.1:{port}", max_retries=2)
        with self.assertRaises(BooktapeError) as e:
            c.book("kalshi", "KX", 1)
        self.assertEqual(e.exception.code, "connection_error")
        self.assertEqual(len(waits), 2)

    def test_asks_for_gzip_and_reads_it_and_sends_the_key(self):
        s = self.serve([(200, {"Content-Encoding": "gzip", "Content-Type": "application/json"}, gzip.compress(BOOK))])
        c, _ = client(s.url)
        self.assertEqual(c.book("kalshi", "KX", 1).raw["yes"], [{"price": "0.42", "size": "15"}])
        headers = {k.lower(): v for k, v in s.seen[0][1].items()}
        self.assertEqual(headers["accept-encoding"], "gzip")
        self.assertEqual(headers["authorization"], "Bearer bt_live_test")

    def test_a_base_url_keeps_its_path_prefix(self):
        s = self.serve([(200, {}, BOOK)])
        c, _ = client(s.url + "/booktape/")
        c.book("b", "KX", 1)
        self.assertTrue(s.seen[0][0].startswith("/booktape/api/v1/exchange-b/market/book?ticker=KX&timestamp=1000"), s.seen[0][0])


class Rules(unittest.TestCase):
    def test_retry_after_in_seconds_or_an_http_date(self):
        self.assertEqual(parse_retry_after("3"), 3.0)
        self.assertEqual(parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0), 10.0)
        self.assertEqual(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0), 0.0)
        for garbage in [None, "", "-1", "1.5", "soon", "2026-03-01"]:
            self.assertIsNone(parse_retry_after(garbage), garbage)

    def test_retry_delay(self):
        p = RetryPolicy(max_retries=2, max_retry_delay=60, base_delay=0.5)
        self.assertEqual(retry_delay(p, 0, 1.0), 1.0)
        self.assertIsNone(retry_delay(p, 0, 61.0))
        self.assertIsNone(retry_delay(p, 2, 1.0))
        self.assertEqual(retry_delay(p, 1, None, rand=lambda: 1.0), 1.0)
        self.assertEqual(retry_delay(p, 1, None, rand=lambda: 0.0), 0.5)

    def test_next_link(self):
        self.assertEqual(next_link('</api/v1/x?cursor=a>; rel="next"'), "/api/v1/x?cursor=a")
        self.assertEqual(next_link('</p1>; rel="prev", </p3>; rel="next"'), "/p3")
        self.assertIsNone(next_link('</p1>; rel="prev"'))
        self.assertIsNone(next_link(None))

    def test_venue_names(self):
        from booktape import venue_path

        for name, path in [("polymarket", "exchange-a"), ("Polymarket", "exchange-a"), ("exchange-a", "exchange-a"), ("a", "exchange-a"), ("kalshi", "exchange-b"), ("EXCHANGE-B", "exchange-b"), ("b", "exchange-b")]:
            self.assertEqual(venue_path(name), path)
        with self.assertRaises(BadRequestError) as e:
            venue_path("binance")
        self.assertEqual(e.exception.param, "venue")

    def test_client_reads_the_environment_and_arguments_win(self):
        import os
        from unittest import mock

        with mock.patch.dict(os.environ, {"BOOKTAPE_API_URL": "http://example.invalid:1", "BOOKTAPE_API_KEY": "bt_live_env"}):
            c = Client()
            self.assertEqual((c.base_url, c._t.api_key), ("http://example.invalid:1", "bt_live_env"))
            c = Client("http://other.invalid:2", "bt_live_arg")
            self.assertEqual((c.base_url, c._t.api_key), ("http://other.invalid:2", "bt_live_arg"))
        with self.assertRaises(BooktapeError):
            Client("not a url")


if __name__ == "__main__":
    unittest.main()
