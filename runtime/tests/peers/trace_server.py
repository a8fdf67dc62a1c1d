"""An MCP server on the official Python SDK (PyPI `mcp` 2.x), over stdio, with one tool that
answers the trace context its `tools/call` request carried in `_meta` (W3C `traceparent` and
`tracestate`, MCP SEP-414), as JSON text: `{"traceparent": ..., "tracestate": ...}` (null when
absent).

Usage: .peers/venv/bin/python trace_server.py
"""

import json

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("trace-demo")


@server.tool()
def trace_context(ctx: Context) -> str:
    """The trace context of this call's request."""
    meta = ctx.request_context.meta or {}
    return json.dumps({"traceparent": meta.get("traceparent"), "tracestate": meta.get("tracestate")})


if __name__ == "__main__":
    server.run("stdio")
