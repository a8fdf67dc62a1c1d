#!/usr/bin/env python3
"""A tiny HTTP API that fails on purpose, for the policy pipeline's retry and fallback tests.
Stdlib only.

Usage: flaky_http.py PORT [FAILURES]      (binds 127.0.0.1:PORT; FAILURES defaults to 2)

  GET  /openapi.json  -> an OpenAPI 3.0 document of the operations below (servers: this port)
  GET  /flaky         -> getFlaky: 503 (Retry-After: 0) for the first FAILURES requests, then
                         200 {"ok": true, "attempt": N}
  POST /flaky         -> postFlaky: the same, counted separately
  GET  /broken        -> getBroken: always 500 {"error": "broken on purpose"}
  GET  /stats         -> 200 {"<METHOD> <path>": requests so far, ...} (not in the document)
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
COUNTS = {}
PORT = int(sys.argv[1])
FAILURES = int(sys.argv[2]) if len(sys.argv) > 2 else 2

OBJECT = {"type": "object"}
OK = {"description": "ok", "content": {"application/json": {"schema": OBJECT}}}


def spec():
    return {
        "openapi": "3.0.3",
        "info": {"title": "flaky", "version": "1"},
        "servers": [{"url": f"http://127.0.0.1:{PORT}"}],
        "paths": {
            "/flaky": {
                "get": {"operationId": "getFlaky", "responses": {"200": OK}},
                "post": {"operationId": "postFlaky", "responses": {"200": OK}},
            },
            "/broken": {
                "get": {
                    "operationId": "getBroken",
                    "parameters": [
                        {"name": "expr", "in": "query", "schema": {"type": "string"}}
                    ],
                    "responses": {"200": OK},
                }
            },
        },
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("flaky_http: " + (fmt % args) + "\n")

    def answer(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def count(self):
        path = self.path.split("?", 1)[0]
        key = f"{self.command} {path}"
        with LOCK:
            COUNTS[key] = COUNTS.get(key, 0) + 1
            return path, COUNTS[key]

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        path = self.path.split("?", 1)[0]
        if self.command == "GET" and path == "/openapi.json":
            return self.answer(200, spec())
        if self.command == "GET" and path == "/stats":
            with LOCK:
                return self.answer(200, dict(COUNTS))
        path, n = self.count()
        if path == "/flaky":
            if n <= FAILURES:
                return self.answer(
                    503, {"error": f"unavailable (request {n})"}, [("Retry-After", "0")]
                )
            return self.answer(200, {"ok": True, "attempt": n})
        if path == "/broken":
            return self.answer(500, {"error": "broken on purpose"})
        return self.answer(404, {"error": "no such path"})

    do_GET = handle_any
    do_POST = handle_any


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
