#!/usr/bin/env python3
"""A misbehaving MCP server over stdio, for the MCP client's tests. Stdlib only.

Newline-delimited JSON-RPC: one message per line on stdin, one JSON object per line on stdout
(flushed after each). Answers `initialize` (echoes the client's protocolVersion unless the mode
says otherwise; capabilities {"tools": {"listChanged": false}}), `ping` ({}), `tools/list`,
`tools/call`; ignores notifications; unknown methods get JSON-RPC error -32601, a tools/call of an
unknown tool -32602 "Unknown tool: <name>". Every `notifications/cancelled` received is appended as
a JSON line to the file named by env FAULT_LOG, when set; so is `{"hanging": <id>}` when a call
of `hang` arrives.

Usage: fault_server.py MODE

  junk           non-JSON lines on stdout: the stream starts with a UTF-8 BOM line
                 "\ufeffServer mode: STDIO", and "some log line" comes before every reply;
                 tool `echo` {message}.
  junk_bom       like junk, and the initialize reply itself is prefixed with a UTF-8 BOM.
  hang           tool `hang` never answers (stdin is still read); `echo` works.
  die            tool `die` writes "fatal: about to die" to stderr and SIGKILLs the process
                 without replying; `echo` works.
  old            initialize answers protocolVersion "2024-11-05" whatever is asked.
  ancient        initialize answers protocolVersion "2023-01-01".
  results        tools multi, empty, app_error, structured, structured_error, structured_bad,
                 big {bytes} (one text block of `bytes` bytes, default 5_000_000), echo.
  paged          tools/list in 3 pages of 2 tools (t1..t6), cursors "page2", "page3".
  paged_forever  every tools/list page has a nextCursor (f1, f2, ... without end).
  list_changed   tools/list = [a, add_tool] once initialized; calling add_tool sends
                 notifications/tools/list_changed, then replies; later lists are [a, add_tool, b].
  stderr         tools `flood` {mb} (writes `mb` MiB to stderr as one line, its newline only
                 at the end, then answers `flooded`) and `bad_utf8` (writes a stderr line with
                 the invalid UTF-8 bytes ff fe, then 1 MiB of ordinary stderr lines, more than a
                 pipe holds, then answers `still here`), and `echo`.
  hang_init      never answers `initialize` (nor any other request); reads stdin until it
                 closes. Prints "waiting for a licence server" to stderr first.
  stray_id       before its `initialize` result, and before each tools/call result, writes an
                 answer to a request never sent (ids 1000 and 999: a result and an error);
                 tool `echo`.
  progress       tool `tick` {count, every_ms}: `count` notifications/progress (for the
                 request's `_meta.progressToken`), `every_ms` apart, then the text
                 "ticked <count>"; tool `hang` never answers (and sends no progress); `echo`.
  deep           tools/list answers with tool `deep` whose inputSchema nests 300 arrays deep
                 (valid JSON, deeper than most parsers' recursion limits); `echo`.
  echo           just `echo` (also the default without an argument).
"""

import json
import os
import signal
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "echo"
MODES = {
    "junk", "junk_bom", "hang", "die", "old", "ancient", "results", "paged", "paged_forever",
    "list_changed", "stderr", "echo", "hang_init", "stray_id", "progress", "deep",
}
if MODE not in MODES:
    sys.stderr.write(f"fault_server.py: unknown mode {MODE!r}; modes: {', '.join(sorted(MODES))}\n")
    sys.exit(2)

JUNK = MODE in ("junk", "junk_bom")
BOM = "\ufeff"
OUT = sys.stdout.buffer

STATE = {"initialized": False, "b_added": False, "bom_reply_done": False}


def write_line(text):
    OUT.write(text.encode("utf-8") + b"\n")
    OUT.flush()


def send(obj, prefix=""):
    if JUNK:
        write_line("some log line")
    write_line(prefix + json.dumps(obj, separators=(",", ":"), ensure_ascii=False))


def result(msg_id, res, prefix=""):
    send({"jsonrpc": "2.0", "id": msg_id, "result": res}, prefix)


def error(msg_id, code, message):
    send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


def text(t):
    return {"content": [{"type": "text", "text": t}]}


def schema(**props):
    return {"type": "object", "properties": props}


STRUCT_OUT = {
    "type": "object",
    "properties": {"status": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["status", "count"],
}

ECHO = {
    "name": "echo",
    "description": "Echoes the message back",
    "inputSchema": {
        "type": "object",
        "properties": {"message": {"type": "string", "description": "Text to echo"}},
        "required": ["message"],
    },
}


def tool(name, description, input_schema=None, output_schema=None):
    t = {"name": name, "description": description, "inputSchema": input_schema or schema()}
    if output_schema is not None:
        t["outputSchema"] = output_schema
    return t


def tools_for_mode():
    if MODE == "deep":
        nested = json.loads("[" * 300 + "]" * 300)
        return [tool("deep", "A schema nested 300 deep", {"type": "object", "default": nested}), ECHO]
    if MODE == "hang":
        return [tool("hang", "Never answers"), ECHO]
    if MODE == "progress":
        return [
            tool("tick", "Reports progress, then answers", schema(count={"type": "integer"}, every_ms={"type": "integer"})),
            tool("hang", "Never answers"),
            ECHO,
        ]
    if MODE == "die":
        return [tool("die", "Kills the server process without replying"), ECHO]
    if MODE == "results":
        return [
            tool("multi", "Text, image, embedded resource and audio content"),
            tool("empty", "No content at all"),
            tool("app_error", "A tool-level error (isError: true)"),
            tool("structured", "Structured content matching the outputSchema", None, STRUCT_OUT),
            tool("structured_error", "isError with structured content", None, STRUCT_OUT),
            tool("structured_bad", "Structured content that breaks the outputSchema", None, STRUCT_OUT),
            tool(
                "big",
                "One text block of `bytes` bytes",
                schema(bytes={"type": "integer", "description": "Size in bytes (default 5000000)"}),
            ),
            ECHO,
        ]
    if MODE == "stderr":
        return [
            tool("flood", "MiB of stderr in one line", schema(mb={"type": "integer"})),
            tool("bad_utf8", "A stderr line that is not UTF-8, then 1 MiB of stderr"),
            ECHO,
        ]
    if MODE == "list_changed":
        tools = [tool("a", "Tool a"), tool("add_tool", "Adds tool b and notifies list_changed")]
        if STATE["b_added"]:
            tools.append(tool("b", "Tool b, added by add_tool"))
        return tools
    return [ECHO]


PAGED = {
    None: (["t1", "t2"], "page2"),
    "page2": (["t3", "t4"], "page3"),
    "page3": (["t5", "t6"], None),
}

MULTI = {
    "content": [
        {"type": "text", "text": "Page title: Dashboard"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {
            "type": "resource",
            "resource": {"uri": "file:///r/report.csv", "mimeType": "text/csv", "text": "a,b\n1,2"},
        },
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
    ]
}


def big_text(n):
    rows = []
    size = 0
    i = 0
    while size < n:
        row = '{"id":%d,"name":"row %d","value":"%s"}\n' % (i, i, "x" * 32)
        rows.append(row)
        size += len(row)
        i += 1
    return "".join(rows)[:n]


def tools_list(msg_id, params):
    cursor = (params or {}).get("cursor")
    if MODE == "paged":
        if cursor not in PAGED:
            return error(msg_id, -32602, f"Invalid cursor: {cursor}")
        names, next_cursor = PAGED[cursor]
        page = {"tools": [tool(n, f"Tool {n}") for n in names]}
        if next_cursor:
            page["nextCursor"] = next_cursor
        return result(msg_id, page)
    if MODE == "paged_forever":
        try:
            page_no = int(cursor[1:]) if cursor else 0
        except (TypeError, ValueError):
            return error(msg_id, -32602, f"Invalid cursor: {cursor}")
        names = [f"f{2 * page_no + 1}", f"f{2 * page_no + 2}"]
        return result(
            msg_id,
            {"tools": [tool(n, f"Tool {n}") for n in names], "nextCursor": f"p{page_no + 1}"},
        )
    if MODE == "list_changed" and not STATE["initialized"]:
        return result(msg_id, {"tools": []})
    return result(msg_id, {"tools": tools_for_mode()})


def tools_call(msg_id, params):
    params = params or {}
    name = params.get("name")
    args = params.get("arguments") or {}
    known = {t["name"] for t in tools_for_mode()} if MODE not in ("paged", "paged_forever") else set()
    if MODE == "paged":
        known = {f"t{i}" for i in range(1, 7)}
    if MODE == "paged_forever":
        known = {name} if isinstance(name, str) and name.startswith("f") and name[1:].isdigit() else set()
    if name not in known:
        return error(msg_id, -32602, f"Unknown tool: {name}")

    if name == "echo":
        return result(msg_id, text(str(args.get("message", ""))))
    if name == "hang":
        log_cancelled({"hanging": msg_id})
        return None  # never answer
    if name == "tick":
        token = ((params.get("_meta") or {}).get("progressToken"))
        count = int(args.get("count", 3))
        for i in range(count):
            time.sleep(int(args.get("every_ms", 100)) / 1000)
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": i + 1, "total": count}})
        return result(msg_id, text(f"ticked {count}"))
    if name == "die":
        sys.stderr.write("fatal: about to die\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        return None
    if name == "flood":
        chunk = b"f" * (1 << 20)
        for _ in range(int(args.get("mb", 1))):
            sys.stderr.buffer.write(chunk)
        sys.stderr.buffer.write(b"\n")
        sys.stderr.buffer.flush()
        return result(msg_id, text("flooded"))
    if name == "bad_utf8":
        sys.stderr.buffer.write(b"bad bytes \xff\xfe here\n")
        line = b"l" * 1023 + b"\n"
        for _ in range(1024):
            sys.stderr.buffer.write(line)
        sys.stderr.buffer.flush()
        return result(msg_id, text("still here"))
    if name == "multi":
        return result(msg_id, MULTI)
    if name == "empty":
        return result(msg_id, {"content": []})
    if name == "app_error":
        return result(
            msg_id, {"isError": True, "content": [{"type": "text", "text": "table not found: orders"}]}
        )
    if name == "structured":
        return result(msg_id, {"content": [], "structuredContent": {"status": "available", "count": 3}})
    if name == "structured_error":
        return result(
            msg_id,
            {
                "isError": True,
                "content": [{"type": "text", "text": "quota exceeded"}],
                "structuredContent": {"error": "quota"},
            },
        )
    if name == "structured_bad":
        return result(msg_id, {"content": [], "structuredContent": {"status": 5}})
    if name == "big":
        n = args.get("bytes", 5_000_000)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            return result(msg_id, {"isError": True, "content": [{"type": "text", "text": "bytes must be a non-negative integer"}]})
        return result(msg_id, text(big_text(n)))
    if name == "add_tool":
        STATE["b_added"] = True
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return result(msg_id, text("added b"))
    # a, b, t1..t6, f<N>
    return result(msg_id, text(f"called {name}"))


def log_cancelled(msg):
    path = os.environ.get("FAULT_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(msg, separators=(",", ":")) + "\n")


def handle(msg):
    if not isinstance(msg, dict):
        return error(None, -32600, "Invalid Request")
    method = msg.get("method")
    msg_id = msg.get("id")
    params = msg.get("params")
    if method is None:
        return None  # a response to something we never asked: ignore
    if "id" not in msg:  # notification
        if method == "notifications/initialized":
            STATE["initialized"] = True
        elif method == "notifications/cancelled":
            log_cancelled(msg)
        return None
    if MODE == "hang_init":
        return None  # the handshake never completes
    if MODE == "stray_id" and method in ("initialize", "tools/call"):
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": 1000, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": 999, "error": {"code": -32000, "message": "stray"}})
    if method == "initialize":
        asked = (params or {}).get("protocolVersion") or "2025-06-18"
        version = {"old": "2024-11-05", "ancient": "2023-01-01"}.get(MODE, asked)
        res = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": f"fault-server-{MODE}", "version": "1.0.0"},
        }
        prefix = ""
        if MODE == "junk_bom" and not STATE["bom_reply_done"]:
            STATE["bom_reply_done"] = True
            prefix = BOM
        return result(msg_id, res, prefix)
    if method == "ping":
        return result(msg_id, {})
    if method == "tools/list":
        return tools_list(msg_id, params)
    if method == "tools/call":
        return tools_call(msg_id, params)
    return error(msg_id, -32601, f"Method not found: {method}")


def main():
    if MODE == "hang_init":
        sys.stderr.write("waiting for a licence server\n")
        sys.stderr.flush()
    if JUNK:
        write_line(BOM + "Server mode: STDIO")
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            break
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line.decode("utf-8-sig"))
        except (ValueError, UnicodeDecodeError) as e:
            error(None, -32700, f"Parse error: {e}")
            continue
        handle(msg)


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
