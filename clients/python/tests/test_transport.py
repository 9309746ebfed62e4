"""Retries, Retry-After, errors and paging rules of the transport, against a scripted local
HTTP server (the real API cannot be made to answer 503 on cue; the 429s of the real API are in
test_api.py)."""
import gzip
import json
import os
import socket
import struct
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from booktape import AuthenticationError, BadRequestError, BooktapeError, Client, QuotaError, ServiceUnavailableError
from booktape.client import content_disposition_filename, safe_filename
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
                if callable(body):
                    # A misbehaving server: the step writes (or breaks) the answer itself.
                    body(self)
                    return
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


def cut(status=200, headers=None, sent=b"", length=1000, reset=True):
    """A step that sends the status line, headers and part of a body promising ``length``
    bytes, then resets the connection (RST) or just closes it."""

    def step(h):
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(length))
        h.end_headers()
        h.wfile.write(sent)
        h.wfile.flush()
        if reset:
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        h.close_connection = True
        h.connection.close()

    return step


def exported(filename, body=b"\x1f\x8b not really", days="1"):
    return (200, {"Content-Type": "application/gzip", "Content-Disposition": f'attachment; filename="{filename}"', "X-Export-Days": days}, body)


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


class BrokenAnswers(unittest.TestCase):
    """Whatever the network or a server does, the caller gets a BooktapeError, never a bare
    Python exception (ConnectionResetError, IncompleteRead, BadGzipFile, UnicodeDecodeError)."""

    def serve(self, script):
        s = Scripted(script)
        self.addCleanup(s.close)
        return s

    def test_a_connection_reset_mid_body_is_retried_then_raised_as_a_connection_error(self):
        s = self.serve([(200, {}, cut(sent=BOOK[:10]))] * 3)
        c, waits = client(s.url, max_retries=2)
        with self.assertRaises(BooktapeError) as e:
            c.book("kalshi", "KX", 1)
        self.assertIs(type(e.exception), BooktapeError)
        self.assertEqual(e.exception.code, "connection_error")
        self.assertIn("broke while reading the answer", e.exception.message)
        self.assertEqual(len(s.seen), 3)
        self.assertEqual(len(waits), 2)

    def test_a_body_closed_short_of_its_length_is_asked_for_again(self):
        s = self.serve([(200, {}, cut(sent=BOOK[:10], length=len(BOOK), reset=False)), (200, {"Content-Type": "application/json"}, BOOK)])
        c, waits = client(s.url)
        self.assertEqual(c.book("kalshi", "KX", 1).raw["yes"][0]["price"], "0.42")
        self.assertEqual([st for _, st in c.requests], [200, 0, 200])
        self.assertEqual(len(waits), 1)

    def test_a_broken_gzip_body_is_an_invalid_response(self):
        for body in [b"not gzip at all", gzip.compress(BOOK)[:-12], gzip.compress(BOOK)[:10] + b"\x00" * 40]:
            with self.subTest(body=body[:12]):
                s = self.serve([(200, {"Content-Encoding": "gzip", "Content-Type": "application/json"}, body)])
                c, _ = client(s.url)
                with self.assertRaises(BooktapeError) as e:
                    c.book("kalshi", "KX", 1)
                self.assertEqual((e.exception.status, e.exception.code), (200, "invalid_response"))
                self.assertIn("Content-Encoding gzip", e.exception.message)

    def test_a_refusal_with_a_broken_body_keeps_its_status_class(self):
        s = self.serve([(400, {"Content-Encoding": "gzip"}, b"\xff\xfe not gzip")])
        c, _ = client(s.url)
        with self.assertRaises(BadRequestError) as e:
            c.book("kalshi", "KX", 1)
        self.assertEqual((e.exception.status, e.exception.code), (400, "http_error"))

    def test_a_body_that_is_not_utf8_is_an_invalid_response(self):
        csv = b"timestamp,ticker\n1,KX\xff\xfe\n"
        s = self.serve([(200, {"Content-Type": "text/csv"}, csv), (200, {"Content-Type": "application/json"}, b'{"yes": "\xff"}')])
        c, _ = client(s.url)
        with self.assertRaises(BooktapeError) as e:
            list(c.raw("kalshi", "KX", 1, 2).csv_pages())
        self.assertEqual(e.exception.code, "invalid_response")
        self.assertIn("not UTF-8", e.exception.message)
        with self.assertRaises(BooktapeError) as e:
            c.book("kalshi", "KX", 1)
        self.assertEqual(e.exception.code, "invalid_response")
        self.assertIn("not UTF-8", e.exception.message)

    def test_json_that_is_not_an_answer_is_an_invalid_response(self):
        for body in [b"[1, 2]", b"[" * 100_000 + b"]" * 100_000, b"\x00{}", b"<html>"]:
            with self.subTest(body=body[:8]):
                s = self.serve([(200, {"Content-Type": "application/json"}, body)])
                c, _ = client(s.url)
                with self.assertRaises(BooktapeError) as e:
                    c.book("kalshi", "KX", 1)
                self.assertEqual(e.exception.code, "invalid_response")

    def test_an_answer_that_is_not_http_is_a_connection_error(self):
        def garbage(h):
            h.wfile.write(b"SSH-2.0-OpenSSH\r\n")
            h.close_connection = True

        s = self.serve([(0, {}, garbage)] * 2)
        c, waits = client(s.url, max_retries=1)
        with self.assertRaises(BooktapeError) as e:
            c.book("kalshi", "KX", 1)
        self.assertEqual(e.exception.code, "connection_error")

    def test_an_export_cut_off_keeps_no_file_and_raises(self):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        s = self.serve([(200, {}, cut(headers={"Content-Disposition": 'attachment; filename="x.csv.gz"', "Content-Type": "application/gzip"}, sent=b"\x1f\x8b" * 100, length=10_000))])
        c, _ = client(s.url)
        with self.assertRaises(BooktapeError) as e:
            c.export("kalshi", "KX", "2026-03-01", "2026-03-01", d)
        self.assertEqual(e.exception.code, "connection_error")
        self.assertEqual(os.listdir(d), [])

    def test_a_saved_export_that_is_not_gzip_is_an_invalid_response_when_read(self):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        s = self.serve([exported("e.csv.gz")])
        c, _ = client(s.url)
        r = c.export("kalshi", "KX", "2026-03-01", "2026-03-01", d)
        self.assertEqual(r.path, os.path.join(os.path.abspath(d), "e.csv.gz"))
        with self.assertRaises(BooktapeError) as e:
            r.to_df()
        self.assertEqual(e.exception.code, "invalid_response")


class ExportFileNames(unittest.TestCase):
    """The API names the file (Content-Disposition); a name that is a path is never followed."""

    HOSTILE = ["..", ".", "../escaped.csv.gz", "../../escaped.csv.gz", "sub/../../escaped.csv.gz", "/tmp/escaped.csv.gz", "..\\escaped.csv.gz", "C:escaped.csv.gz", ".hidden", "a\x01b.csv.gz", ""]

    def setUp(self):
        root = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(root, ignore_errors=True))
        self.root = root
        self.dir = os.path.join(root, "target")
        os.mkdir(self.dir)

    def everything(self):
        return sorted(os.path.relpath(os.path.join(p, f), self.root) for p, _, fs in os.walk(self.root) for f in fs)

    def test_a_plain_name_is_written_inside_the_directory(self):
        s = Scripted([exported("exchange-b_KX_2026-03-01_2026-03-01.csv.gz", b"abc")])
        self.addCleanup(s.close)
        c, _ = client(s.url)
        r = c.export("kalshi", "KX", "2026-03-01", "2026-03-01", self.dir)
        self.assertEqual((r.filename, r.size, r.days), ("exchange-b_KX_2026-03-01_2026-03-01.csv.gz", 3, 1))
        self.assertEqual(self.everything(), ["target/exchange-b_KX_2026-03-01_2026-03-01.csv.gz"])

    def test_a_name_with_dots_or_separators_is_refused_and_nothing_is_written(self):
        for name in self.HOSTILE:
            with self.subTest(name=name):
                s = Scripted([exported(name)])
                self.addCleanup(s.close)
                c, _ = client(s.url)
                with self.assertRaises(BooktapeError) as e:
                    c.export("kalshi", "KX", "2026-03-01", "2026-03-01", self.dir)
                self.assertEqual(e.exception.code, "invalid_response")
                self.assertIn("pass path=", e.exception.message)
                self.assertEqual(self.everything(), [])

    def test_a_hostile_name_in_the_current_directory_is_refused_too(self):
        s = Scripted([exported("../escaped.csv.gz")])
        self.addCleanup(s.close)
        c, _ = client(s.url)
        cwd = os.getcwd()
        os.chdir(self.dir)
        self.addCleanup(os.chdir, cwd)
        with self.assertRaises(BooktapeError):
            c.export("kalshi", "KX", "2026-03-01", "2026-03-01")
        self.assertEqual(self.everything(), [])

    def test_a_file_path_given_by_the_caller_does_not_need_the_name(self):
        s = Scripted([exported("../../escaped.csv.gz", b"abc")])
        self.addCleanup(s.close)
        c, _ = client(s.url)
        r = c.export("kalshi", "KX", "2026-03-01", "2026-03-01", os.path.join(self.dir, "mine.csv.gz"))
        self.assertIsNone(r.filename)
        self.assertEqual(self.everything(), ["target/mine.csv.gz"])

    def test_content_disposition_forms(self):
        self.assertEqual(content_disposition_filename('attachment; filename="a b.csv.gz"'), "a b.csv.gz")
        self.assertEqual(content_disposition_filename("attachment; filename=a.parquet"), "a.parquet")
        self.assertEqual(content_disposition_filename('attachment; filename="x.csv"; filename*=UTF-8\'\'%2E%2E%2Fy.csv'), "../y.csv")
        self.assertEqual(content_disposition_filename('attachment; filename="q\\"x"'), 'q"x')
        self.assertIsNone(content_disposition_filename("attachment"))
        self.assertIsNone(content_disposition_filename(None))

    def test_safe_filename(self):
        for name in self.HOSTILE + ["x/y", "a\x00b", "x" * 256]:
            self.assertIsNone(safe_filename(name), name)
        for name in ["exchange-a_0xab_2026-03-01_2026-03-31.csv.gz", "KXBTCD-26MAR0117-T84999.99.parquet", "a..b.csv"]:
            self.assertEqual(safe_filename(name), name)


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
