"""An MCP server (PyPI `mcp` 2.x, stdio) whose tool description is read from a file at start-up,
for tool-pinning tests: change the file between two runs and the tool's hash changes. Its
`wipe` tool is marked destructive (toolgate's `dangerous`), for authorization tests.

Usage: .peers/venv/bin/python pinned_server.py DESCRIPTION_FILE
"""

import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

with open(sys.argv[1], encoding="utf-8") as f:
    DESCRIPTION = f.read().strip()

server = MCPServer("pinned")


@server.tool(description=DESCRIPTION)
def greet(name: str) -> str:
    return f"hello {name}"


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def wipe(target: str) -> str:
    """Delete everything under a target (harmless here: it only says so)."""
    return f"wiped {target}"


if __name__ == "__main__":
    server.run("stdio")
