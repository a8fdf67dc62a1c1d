#!/usr/bin/env python3
"""An A2A 1.0 agent written without an SDK (stdlib only), so that its stream can do what the
SDKs refuse to send. JSON-RPC binding over HTTP.

Usage: a2a_raw_stream.py PORT

Listens on 127.0.0.1:PORT. `GET /.well-known/agent-card.json` is a card with one skill `echo`,
`capabilities.streaming: true` and the JSON-RPC endpoint `POST /`. `SendStreamingMessage`
answers `text/event-stream` with, in order: the task (working), artifact `stream-1` in two
chunks "Hello" and " world" (the second with `append: true, lastChunk: true`), one more chunk
" IGNORED-AFTER-LAST" of `stream-1` (append, after its last chunk), an `append` to artifact
`orphan-1` that was never started ("orphan"), then the status `completed` (final). Any other
method gets JSON-RPC error -32601. Runs until killed.
"""

import http.server
import json
import sys

PORT = int(sys.argv[1])
TASK = {"id": "task-1", "contextId": "ctx-1"}


def card():
    return {
        "name": "raw-stream",
        "description": "A hand-written A2A agent whose stream breaks the artifact rules.",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": f"http://127.0.0.1:{PORT}/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "Streams a fixed answer.", "tags": []}],
    }


def chunk(artifact_id, text, append, last):
    return {"artifactUpdate": {**{"taskId": TASK["id"], "contextId": TASK["contextId"]},
            "artifact": {"artifactId": artifact_id, "parts": [{"text": text}]},
            "append": append, "lastChunk": last}}


def events():
    yield {"task": {**TASK, "status": {"state": "TASK_STATE_WORKING"}}}
    yield chunk("stream-1", "Hello", False, False)
    yield chunk("stream-1", " world", True, True)
    yield chunk("stream-1", " IGNORED-AFTER-LAST", True, False)
    yield chunk("orphan-1", "orphan", True, True)
    yield {"statusUpdate": {"taskId": TASK["id"], "contextId": TASK["contextId"],
           "status": {"state": "TASK_STATE_COMPLETED"}, "final": True}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, kind, body):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/.well-known/agent-card.json":
            self.reply(200, "application/json", json.dumps(card()).encode())
        else:
            self.reply(404, "text/plain", b"not found")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        rid = request.get("id")
        if request.get("method") != "SendStreamingMessage":
            body = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
            self.reply(200, "application/json", json.dumps(body).encode())
            return
        stream = b"".join(
            b"data: " + json.dumps({"jsonrpc": "2.0", "id": rid, "result": e}).encode() + b"\n\n"
            for e in events()
        )
        self.reply(200, "text/event-stream", stream)

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
