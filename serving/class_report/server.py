"""The teacher's page, served while the class works (`make class` starts it): the class report at
http://HOST:PORT/?token=TOKEN, checked again every minute (only the notebooks saved since) and on the
page's "Check now" button. The token is the teacher's own, not a student's: any other answer is 403.
"""

from __future__ import annotations

import hmac
import threading
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from serving.class_report import Report, Stopped
from serving.class_report.page import REFRESH, html_page

REFUSED = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Not yours</title></head><body>"
    "<main><h1>This page is the teacher's</h1><p>Its link has a token of its own; a student's link does "
    "not open it.</p></main></body></html>"
)


class TeacherPage(ThreadingHTTPServer):
    """The server; `report` is checked again every `every` seconds in a thread of its own until
    `shutdown()`."""

    daemon_threads = True

    def __init__(self, address, report: Report, token: str, every: float = REFRESH):
        super().__init__(address, _Handler)
        self.report, self.token, self.every = report, token, every
        self._lock, self._stop, self._now = threading.Lock(), threading.Event(), threading.Event()
        self._checker = threading.Thread(target=self._check_often, name="class-report", daemon=True)

    def start(self) -> TeacherPage:
        """Serve and check in threads of their own; returns self."""
        self._checker.start()
        threading.Thread(target=self.serve_forever, name="teacher-page", daemon=True).start()
        return self

    def check_now(self):
        with self._lock:
            self.report.update()

    def _check_often(self):
        while not self._stop.is_set():
            try:
                self.check_now()
            except Stopped:
                return
            except Exception as exc:  # noqa: BLE001 - a failed round must not end the page
                print(f"The class report could not check the notebooks: {exc}", flush=True)
            self._stop.wait(self.every)

    def shutdown(self):
        """Stop serving and checking: a round under way is ended, its workers killed."""
        self._stop.set()
        self.report.stop()
        super().shutdown()
        self.server_close()
        if self._checker.is_alive():
            self._checker.join(30)

    def allowed(self, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self.token.encode())


class _Handler(BaseHTTPRequestHandler):
    server: TeacherPage

    def _send(self, status: HTTPStatus, body: str = "", location: str = ""):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")  # the token is in the address
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 - http.server's name
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        token = query.get("token", [""])[0]
        if not self.server.allowed(token):
            self._send(HTTPStatus.FORBIDDEN, REFUSED)
            return
        self._send(HTTPStatus.OK, html_page(self.server.report, True, token, self.server.every))

    def do_POST(self):  # noqa: N802
        try:
            length = max(0, min(int(self.headers.get("Content-Length") or 0), 4096))
        except ValueError:
            length = 0
        form = urllib.parse.parse_qs(self.rfile.read(length).decode(errors="replace"))
        token = form.get("token", [""])[0]
        if not self.server.allowed(token) or urllib.parse.urlsplit(self.path).path != "/check":
            self._send(HTTPStatus.FORBIDDEN, REFUSED)
            return
        try:
            self.server.check_now()
        except Stopped:
            pass
        self._send(HTTPStatus.SEE_OTHER, location="/?" + urllib.parse.urlencode({"token": token}))

    def log_message(self, format, *args):  # noqa: A002 - the teacher's terminal holds the class's links
        pass
