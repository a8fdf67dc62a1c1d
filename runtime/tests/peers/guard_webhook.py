#!/usr/bin/env python3
"""A guardrail webhook for the tests (stdlib only): answers toolgate's checks by what the
arguments or the result say, and appends each request it receives to a file.

Usage: guard_webhook.py PORT REQUESTS_FILE      (binds 127.0.0.1:PORT)

POST /check with {"direction", "tool", "caller", "arguments"|"result"}:
  arguments whose JSON holds `please-deny`   -> {"action": "deny", "reason": "no deny words"}
  arguments whose JSON holds `please-modify` -> {"action": "modify", "arguments": {"text": "modified by the hook"}}
  arguments whose JSON holds `please-stall`  -> no answer for 20 s, then allow
  a result whose JSON holds `please-rewrite` -> {"action": "modify", "result": {"content": [{"type": "text", "text": "rewritten by the hook"}]}}
  anything else                               -> {"action": "allow"}
"""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
REQUESTS = sys.argv[2]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with open(REQUESTS, "a", encoding="utf-8") as f:
            f.write(json.dumps(body) + "\n")
        seen = json.dumps(body.get(body["direction"]))
        answer = {"action": "allow"}
        if body["direction"] == "arguments":
            if "please-deny" in seen:
                answer = {"action": "deny", "reason": "no deny words"}
            elif "please-modify" in seen:
                answer = {"action": "modify", "arguments": {"text": "modified by the hook"}}
            elif "please-stall" in seen:
                time.sleep(20)
        elif "please-rewrite" in seen:
            answer = {
                "action": "modify",
                "result": {"content": [{"type": "text", "text": "rewritten by the hook"}]},
            }
        data = json.dumps(answer).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
