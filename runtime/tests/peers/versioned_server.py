"""An MCP server (PyPI `mcp` 2.x, stdio) whose tools carry versions in their `_meta`, for tool
version tests: `greet`'s version is read from a file at start-up (under `_meta.version`), so
that a test can bump it between two runs; `search` is always 2.4.0 (under
`_meta["toolgate/version"]`, the key toolgate exports); `wave` declares no version.

Usage: .peers/venv/bin/python versioned_server.py VERSION_FILE
"""

import sys

from mcp.server.mcpserver import MCPServer

with open(sys.argv[1], encoding="utf-8") as f:
    VERSION = f.read().strip()

server = MCPServer("versioned")


@server.tool(meta={"version": VERSION})
def greet(name: str) -> str:
    """Greets someone by name."""
    return f"hello {name}"


@server.tool(meta={"toolgate/version": "2.4.0"})
def search(query: str) -> str:
    """Searches for a query (it only echoes it)."""
    return f"results for {query}"


@server.tool()
def wave(name: str) -> str:
    """Waves at someone."""
    return f"*waves at {name}*"


if __name__ == "__main__":
    server.run("stdio")
