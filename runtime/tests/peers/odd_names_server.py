"""An MCP server on the official Python SDK (PyPI `mcp`), over stdio, whose tool names MCP allows
but model providers do not: `admin.tools.list`, `Report builder`, and a
70-character name. Each tool answers with its own name, so a test sees which one a call reached.

Usage: .peers/venv/bin/python odd_names_server.py
"""

from mcp.server.mcpserver import MCPServer

LONG = "analytics.generate_quarterly_revenue_breakdown_by_regions_and_products"
assert len(LONG) == 70

server = MCPServer("odd-names")


def echo_name(name: str):
    def tool() -> str:
        return f"called {name}"

    tool.__doc__ = f"Answers with its own name, {name}."
    return tool


for name in ("admin.tools.list", "Report builder", LONG):
    server.tool(name=name)(echo_name(name))


if __name__ == "__main__":
    server.run("stdio")
