"""A few-line MCP server on the official Python SDK (PyPI `mcp` 2.x), over stdio. It speaks both
protocol eras: `server/discover` (2026-07-28, stateless) and `initialize`.

Usage: .peers/venv/bin/python py_server.py
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("py-demo")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


if __name__ == "__main__":
    server.run("stdio")
