"""An MCP server with one slow tool, on the official Python SDK (PyPI `mcp` 2.x), over stdio, for
the concurrency-limit tests: calls run concurrently on the server's side, and each one records
when it started and ended, so that a test can tell whether calls overlapped.

Usage: .peers/venv/bin/python slow_server.py LOG

Tool `slow` {tag: str, ms: int = 300}: sleeps `ms` milliseconds (asynchronously: other calls go
on meanwhile), then answers `done <tag>`. Appends `start <tag> <t>` when it starts and
`end <tag> <t>` when it ends to the file LOG, one line each, `t` in nanoseconds of the
monotonic clock. At start-up it appends `boot <pid> <t>`: how many processes served (a hot
reload that keeps a source keeps its process).
"""

import asyncio
import os
import sys
import time

from mcp.server.mcpserver import MCPServer

LOG = sys.argv[1]
server = MCPServer("slow")


def record(event: str, tag: str) -> None:
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(f"{event} {tag} {time.monotonic_ns()}\n")


@server.tool()
async def slow(tag: str, ms: int = 300) -> str:
    """Sleeps `ms` milliseconds, then answers `done <tag>`."""
    record("start", tag)
    try:
        await asyncio.sleep(ms / 1000)
    finally:
        record("end", tag)
    return f"done {tag}"


if __name__ == "__main__":
    record("boot", str(os.getpid()))
    server.run("stdio")
