#!/usr/bin/env python3
"""A minimal MCP streamable HTTP server with sessions, for the MCP client's tests. Stdlib only.

Usage: http_session_server.py PORT        (binds 127.0.0.1:PORT)

  POST /mcp initialize    -> 200 application/json, header Mcp-Session-Id: <new uuid>
  POST /mcp (other)       -> needs a known Mcp-Session-Id: missing or never issued -> 400
                             "No valid session ID provided"; issued but expired/deleted -> 404
                             (JSON-RPC error -32001 "Session not found").
                             A notification (no id) or a response -> 202, empty body.
                             ping -> {}; tools/list -> echo, whoami; tools/call echo {message} ->
                             text; whoami -> the session id as text; unknown tool -> -32602;
                             unknown method -> -32601.
  POST /admin/expire      -> forgets all sessions (no session needed); 200 {"expired": N}
  DELETE /mcp             -> with a known session id: 200 and the session is forgotten;
                             unknown -> 404, none -> 400
  GET /mcp                -> 405 (no server-initiated SSE stream)

Every request is logged as a JSON line {"method", "path", "session", "protocol_version",
"rpc_method"} to the file named by env SESSION_LOG, when set.

With env TOOLS_CHANGE=1 the tool list can change, for all sessions at once: `initialize`
announces `tools.listChanged: true`, tools/list also offers `add_tool`, and tools/call add_tool
adds tool `b` (it echoes like echo) for every session, then answers as text/event-stream:
first `notifications/tools/list_changed`, then the result. Only the calling session hears the
notice, as with a server that tells each session on its own stream.
"""

import json
import os
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
SESSIONS = set()  # live session ids
ISSUED = set()  # every session id ever issued (to tell "expired" from "never valid")
LOG_PATH = os.environ.get("SESSION_LOG")
TOOLS_CHANGE = os.environ.get("TOOLS_CHANGE") == "1"
ADDED = threading.Event()  # TOOLS_CHANGE: add_tool was called (tool `b` is offered)

ECHO = {
    "name": "echo",
    "description": "Echoes the message back",
    "inputSchema": {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
}
WHOAMI = {
    "name": "whoami",
    "description": "Returns the caller's MCP session id",
    "inputSchema": {"type": "object", "properties": {}},
}
ADD_TOOL = {
    "name": "add_tool",
    "description": "Adds tool b for every session and says the tool list changed",
    "inputSchema": {"type": "object", "properties": {}},
}
B = dict(ECHO, name="b", description="Echoes the message back (added by add_tool)")


def tools():
    offered = [ECHO, WHOAMI]
    if TOOLS_CHANGE:
        offered.append(ADD_TOOL)
        if ADDED.is_set():
            offered.append(B)
    return offered


def log(entry):
    if not LOG_PATH:
        return
    line = json.dumps(entry, separators=(",", ":")) + "\n"
    with LOCK:
        with open(LOG_PATH, "a", encoding="utf-8") as f:
            f.write(line)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "http-session-server/1.0"

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    # -- helpers ---------------------------------------------------------------------------------

    def session_header(self):
        return self.headers.get("Mcp-Session-Id")

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def reply(self, status, body=b"", content_type=None, headers=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body, separators=(",", ":")).encode("utf-8")
            content_type = content_type or "application/json"
        elif isinstance(body, str):
            body = body.encode("utf-8")
            content_type = content_type or "text/plain; charset=utf-8"
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def log_request_line(self, rpc_method=None):
        log(
            {
                "method": self.command,
                "path": self.path,
                "session": self.session_header(),
                "protocol_version": self.headers.get("MCP-Protocol-Version"),
                "authorization": self.headers.get("Authorization"),
                "x_tenant": self.headers.get("X-Tenant"),
                "rpc_method": rpc_method,
            }
        )

    # -- verbs -----------------------------------------------------------------------------------

    def do_GET(self):
        self.log_request_line()
        self.reply(405, "Method Not Allowed", headers={"Allow": "POST, DELETE"})

    def do_DELETE(self):
        self.log_request_line()
        if self.path.split("?")[0] != "/mcp":
            return self.reply(404, "Not Found")
        sid = self.session_header()
        if not sid:
            return self.reply(400, "No valid session ID provided")
        with LOCK:
            known = sid in SESSIONS
            SESSIONS.discard(sid)
        if not known:
            return self.reply(404, "Session not found")
        self.reply(200)

    def do_POST(self):
        path = self.path.split("?")[0]
        raw = self.read_body()
        if path == "/admin/expire":
            self.log_request_line()
            with LOCK:
                n = len(SESSIONS)
                SESSIONS.clear()
            return self.reply(200, {"expired": n})
        if path != "/mcp":
            self.log_request_line()
            return self.reply(404, "Not Found")
        try:
            msg = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            self.log_request_line()
            return self.reply(
                400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"Parse error: {e}"}}
            )
        rpc_method = msg.get("method") if isinstance(msg, dict) else None
        self.log_request_line(rpc_method)
        if not isinstance(msg, dict):
            return self.reply(
                400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
            )
        msg_id = msg.get("id")

        if rpc_method == "initialize":
            sid = str(uuid.uuid4())
            with LOCK:
                SESSIONS.add(sid)
                ISSUED.add(sid)
            asked = (msg.get("params") or {}).get("protocolVersion") or "2025-06-18"
            result = {
                "protocolVersion": asked,
                "capabilities": {"tools": {"listChanged": TOOLS_CHANGE}},
                "serverInfo": {"name": "http-session-server", "version": "1.0.0"},
            }
            return self.reply(
                200, {"jsonrpc": "2.0", "id": msg_id, "result": result}, headers={"Mcp-Session-Id": sid}
            )

        sid = self.session_header()
        with LOCK:
            live = sid in SESSIONS
            issued = sid in ISSUED
        if not sid or not issued:
            return self.reply(
                400,
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}},
            )
        if not live:
            return self.reply(
                404, {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32001, "message": "Session not found"}}
            )

        if rpc_method is None or "id" not in msg:  # a response or a notification
            return self.reply(202)

        def ok(result):
            return self.reply(200, {"jsonrpc": "2.0", "id": msg_id, "result": result})

        def err(code, message):
            return self.reply(200, {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})

        if rpc_method == "ping":
            return ok({})
        if rpc_method == "tools/list":
            return ok({"tools": tools()})
        if rpc_method == "tools/call":
            params = msg.get("params") or {}
            name = params.get("name")
            args = params.get("arguments") or {}
            if name == "echo" or (name == "b" and ADDED.is_set()):
                return ok({"content": [{"type": "text", "text": str(args.get("message", ""))}]})
            if name == "whoami":
                return ok({"content": [{"type": "text", "text": sid}]})
            if name == "add_tool" and TOOLS_CHANGE:
                ADDED.set()
                notice = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
                result = {"jsonrpc": "2.0", "id": msg_id, "result": {"content": [{"type": "text", "text": "added b"}]}}
                events = "".join(
                    f"event: message\ndata: {json.dumps(m, separators=(',', ':'))}\n\n" for m in (notice, result)
                )
                return self.reply(200, events, content_type="text/event-stream")
            return err(-32602, f"Unknown tool: {name}")
        return err(-32601, f"Method not found: {rpc_method}")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 refuses bursts of concurrent clients


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: http_session_server.py PORT\n")
        sys.exit(2)
    port = int(sys.argv[1])
    server = Server(("127.0.0.1", port), Handler)
    sys.stderr.write(f"http_session_server listening on 127.0.0.1:{port}\n")
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
