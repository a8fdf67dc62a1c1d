"""An MCP server on the official Python SDK (PyPI `mcp` 2.x) that gives away the credentials it
was given, every way a careless server might: for the tests that check that no configured secret
leaves toolgate.

Usage:
  .peers/venv/bin/python leaky_server.py stdio NAME...   the values of environment variables NAME
  .peers/venv/bin/python leaky_server.py http PORT       the request's headers (streamable HTTP on
                                                        127.0.0.1:PORT, path /mcp)

"What it knows" is, over stdio, `NAME=value` for each NAME (unset: empty), and over HTTP, the
headers of the current request. Each value is given in three forms: as is, JSON-escaped
(`json.dumps`) and percent-encoded (`urllib.parse.quote`, nothing kept but unreserved characters).

At start (stdio), when env LEAKY_ANNOUNCE is set, it writes to stderr one line per NAME:
`env NAME=<value> json=<json.dumps(value)>`.

Tools:
  reveal        a text result with what it knows
  fail          an error result (isError) with it
  rpc_error     a JSON-RPC error (code -32000) whose message holds it
  log           a `notifications/message` (level warning) with it, then the text `logged`
  spill {name}  (stdio) one stderr line of 1000 characters whose last ones are the first half of
                the value of `name`, its second half right after and `-end`, then three more
                stderr lines with the value, the process then exits with status 3 without
                answering (so that the gateway's error quotes its last stderr lines)
"""

import json
import os
import sys
import urllib.parse

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

MODE = sys.argv[1] if len(sys.argv) > 1 else "stdio"
NAMES = sys.argv[2:] if MODE == "stdio" else []
server = MCPServer("leaky")


def known(ctx: Context) -> dict:
    if MODE == "http":
        return dict(ctx.headers or {})
    return {name: os.environ.get(name, "") for name in NAMES}


def forms(values: dict) -> str:
    parts = []
    for k, v in values.items():
        parts.append(f"{k}={v}")
        parts.append(f"{k} json={json.dumps(v)}")
        parts.append(f"{k} pct={urllib.parse.quote(v, safe='')}")
    return "; ".join(parts)


@server.tool()
def reveal(ctx: Context) -> str:
    """What the server knows, as a result."""
    return "I know: " + forms(known(ctx))


@server.tool()
def fail(ctx: Context) -> str:
    """What the server knows, as an error result."""
    raise ToolError("cannot: " + forms(known(ctx)))


@server.tool()
def rpc_error(ctx: Context) -> str:
    """What the server knows, as a JSON-RPC error."""
    raise MCPError(-32000, "refused: " + forms(known(ctx)))


@server.tool()
async def log(ctx: Context) -> str:
    """What the server knows, as a log notification."""
    await ctx.warning("log: " + forms(known(ctx)))
    return "logged"


@server.tool()
def spill(name: str) -> str:
    """Spills the value of `name` on stderr across the 1000th character, then exits."""
    value = os.environ.get(name, "")
    half = len(value) // 2
    line = "p" * (1000 - half) + value + "-end"
    sys.stderr.write(line + "\n")
    for i in range(3):
        sys.stderr.write(f"spilled {i}: {value}\n")
    sys.stderr.flush()
    os._exit(3)


if __name__ == "__main__":
    if MODE == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        if os.environ.get("LEAKY_ANNOUNCE"):
            for name in NAMES:
                value = os.environ.get(name, "")
                sys.stderr.write(f"env {name}={value} json={json.dumps(value)}\n")
            sys.stderr.flush()
        server.run("stdio")
