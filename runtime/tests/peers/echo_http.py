#!/usr/bin/env python3
"""A tiny HTTP API that echoes the credentials it was sent, for the tests that check that no
configured secret leaves toolgate. Stdlib only.

Usage: echo_http.py PORT      (binds 127.0.0.1:PORT)

  GET /openapi.json  -> an OpenAPI 3.0 document of the operations below (servers: this port),
                        with four security schemes: `key` (apiKey, query `api_key`), `hkey`
                        (apiKey, header `X-Key`), `bearer` (http bearer), `basic` (http basic);
                        each operation takes any one of them
  GET /echo          -> echo: 200 application/json {"headers": {...}, "query": "<raw query>"}
  GET /fail          -> fail: 502 text/plain "you sent <headers as JSON> and ?<raw query>"
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])

OBJECT = {"type": "object"}
OK = {"description": "ok", "content": {"application/json": {"schema": OBJECT}}}
ANY_AUTH = [{"key": []}, {"hkey": []}, {"bearer": []}, {"basic": []}]


def spec():
    def op(operation_id):
        return {"get": {"operationId": operation_id, "security": ANY_AUTH, "responses": {"200": OK}}}

    return {
        "openapi": "3.0.3",
        "info": {"title": "echo", "version": "1"},
        "servers": [{"url": f"http://127.0.0.1:{PORT}"}],
        "paths": {"/echo": op("echo"), "/fail": op("fail")},
        "components": {
            "securitySchemes": {
                "key": {"type": "apiKey", "in": "query", "name": "api_key"},
                "hkey": {"type": "apiKey", "in": "header", "name": "X-Key"},
                "bearer": {"type": "http", "scheme": "bearer"},
                "basic": {"type": "http", "scheme": "basic"},
            }
        },
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    def reply(self, status, body, content_type, extra=None):
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path, _, query = self.path.partition("?")
        headers = dict(self.headers.items())
        if path == "/openapi.json":
            return self.reply(200, json.dumps(spec()), "application/json")
        if path == "/echo":
            body = json.dumps({"headers": headers, "query": query})
            return self.reply(200, body, "application/json")
        if path == "/fail":
            return self.reply(502, f"you sent {json.dumps(headers)} and ?{query}", "text/plain")
        return self.reply(404, "not found", "text/plain")


class Server(ThreadingHTTPServer):
    daemon_threads = True


if __name__ == "__main__":
    Server(("127.0.0.1", PORT), Handler).serve_forever()
