"""The urllib transport against a local HTTP server: statuses pass through, redirects are refused,
an unreachable Hub is a TransportError, the credential is sent only as a bearer header."""

from __future__ import annotations

import http.server
import socket
import threading
import unittest
from typing import Any, List, Tuple

from ma2h import Hub, NotFound, ProtocolError, TransportError
from ma2h._transport import UrllibTransport


class _Handler(http.server.BaseHTTPRequestHandler):
    seen: List[Tuple[str, str, str]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        _Handler.seen.append((self.command, self.path, self.headers.get("Authorization", "")))
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", "http://elsewhere.invalid/")
            body = b""
        elif self.path.startswith("/v1/messages/msg_missing"):
            self.send_response(404)
            body = b'{"error":{"code":"not_found","message":"unknown message id"}}'
        else:
            self.send_response(429)
            self.send_header("Retry-After", "3")
            body = b'{"error":{"code":"rate_limited","message":"slow down"}}'
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


class UrllibTransportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
        cls.url = f"http://127.0.0.1:{cls.server.server_port}"
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.shutdown()
        cls.server.server_close()

    def test_statuses_and_retry_after_pass_through(self) -> None:
        reply = UrllibTransport()("POST", self.url + "/v1/messages", {"Content-Type": "application/json"}, b"{}", 5)
        self.assertEqual((reply.status, reply.retry_after), (429, 3.0))
        self.assertIn(b"rate_limited", reply.body)

    def test_redirects_are_refused_not_followed(self) -> None:
        with self.assertRaises(ProtocolError):
            UrllibTransport()("GET", self.url + "/redirect", {}, None, 5)
        self.assertNotIn("elsewhere", " ".join(p for _, p, _ in _Handler.seen))

    def test_hub_errors_and_the_bearer_header(self) -> None:
        hub = Hub(self.url, "ma2h_ak_abc", "bot")
        with self.assertRaises(NotFound):
            hub.get("msg_missing")
        self.assertEqual(_Handler.seen[-1][2], "Bearer ma2h_ak_abc")

    def test_an_unreachable_hub_is_a_transport_error_without_the_key(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # closed again: nothing listens there
        hub = Hub(f"http://127.0.0.1:{port}", "ma2h_ak_secret", "bot")
        with self.assertRaises(TransportError) as caught:
            hub.discover()
        self.assertNotIn("ma2h_ak_secret", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
