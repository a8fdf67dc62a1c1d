#!/usr/bin/env python3
"""A legacy HTTP+SSE "MCP server" that never names its message endpoint. Stdlib only.

Usage: silent_sse.py PORT

Listens on 127.0.0.1:PORT. `GET /sse` answers 200 `text/event-stream` and then sends only a
comment line (`: waiting`) every 200 ms, never the `endpoint` event a client needs before it
can send anything, until the client goes away. Every other request gets 404. Runs until killed.
"""

import http.server
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path.split("?")[0] != "/sse":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            while True:
                self.wfile.write(b": waiting\n\n")
                self.wfile.flush()
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            return

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
