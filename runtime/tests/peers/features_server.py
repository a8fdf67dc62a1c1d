#!/usr/bin/env python3
"""An MCP server over stdio offering resources, prompts and completions, some of them broken on
purpose, for the passthrough tests of the MCP client. Stdlib only.

Newline-delimited JSON-RPC. `initialize` echoes the client's protocolVersion; capabilities:
tools (none listed), resources {subscribe, listChanged}, prompts {listChanged}, completions.
Anything else (`server/discover` included) is -32601.

  resources/list            two pages: r1, r2 (nextCursor "2"), then r3 (peer://r1 ... peer://r3)
  resources/templates/list  one template, peer://item/{id}
  resources/read            peer://never: never answered; peer://die: the process exits
                            without answering; anything else: one text content "read <uri>"
  resources/subscribe       {} then notifications/resources/updated for the URI
  resources/unsubscribe     {}
  prompts/list              never ends: every page has a nextCursor (p1, p2, ...)
  prompts/get               one user message whose text is the prompt's name
  completion/complete       never answered
"""

import json
import os
import sys

OUT = sys.stdout.buffer


def send(obj):
    OUT.write(json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n")
    OUT.flush()


def result(msg_id, res):
    send({"jsonrpc": "2.0", "id": msg_id, "result": res})


def error(msg_id, code, message):
    send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


def handle(msg):
    method = msg.get("method")
    msg_id = msg.get("id")
    params = msg.get("params") or {}
    if method is None or "id" not in msg:
        return
    if method == "initialize":
        return result(msg_id, {
            "protocolVersion": params.get("protocolVersion") or "2025-06-18",
            "capabilities": {
                "tools": {},
                "resources": {"subscribe": True, "listChanged": True},
                "prompts": {"listChanged": True},
                "completions": {},
            },
            "serverInfo": {"name": "features-server", "version": "1.0.0"},
        })
    if method == "ping":
        return result(msg_id, {})
    if method == "tools/list":
        return result(msg_id, {"tools": []})
    if method == "resources/list":
        def res(n):
            return {"uri": f"peer://r{n}", "name": f"r{n}", "mimeType": "text/plain"}
        if params.get("cursor") == "2":
            return result(msg_id, {"resources": [res(3)]})
        return result(msg_id, {"resources": [res(1), res(2)], "nextCursor": "2"})
    if method == "resources/templates/list":
        return result(msg_id, {"resourceTemplates": [{"uriTemplate": "peer://item/{id}", "name": "item"}]})
    if method == "resources/read":
        uri = params.get("uri", "")
        if uri == "peer://never":
            return
        if uri == "peer://die":
            sys.stdout.flush()
            os._exit(3)
        return result(msg_id, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"read {uri}"}]})
    if method == "resources/subscribe":
        result(msg_id, {})
        return send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                     "params": {"uri": params.get("uri", "")}})
    if method == "resources/unsubscribe":
        return result(msg_id, {})
    if method == "prompts/list":
        n = int(params.get("cursor") or "1")
        return result(msg_id, {"prompts": [{"name": f"p{n}"}], "nextCursor": str(n + 1)})
    if method == "prompts/get":
        name = params.get("name", "")
        return result(msg_id, {"messages": [{"role": "user", "content": {"type": "text", "text": name}}]})
    if method == "completion/complete":
        return
    return error(msg_id, -32601, f"Method not found: {method}")


def main():
    for line in sys.stdin.buffer:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict):
            handle(msg)


if __name__ == "__main__":
    main()
