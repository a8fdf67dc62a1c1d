"""An MCP server (official Python SDK, stdio) for the guardrail tests: its results carry personal
data and secrets, and it appends every call it receives to a file, so that a test can tell
whether a call reached it.

Usage: .peers/venv/bin/python guard_server.py CALLS_FILE
"""

import json
import sys

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

CALLS = sys.argv[1]
server = MCPServer("guard-demo")


def record(tool, arguments):
    with open(CALLS, "a", encoding="utf-8") as f:
        f.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


@server.tool()
def leak() -> str:
    """A customer record, as text."""
    record("leak", {})
    return (
        "customer ann.smith@example.org paid with 4111 1111 1111 1111 "
        "(order 4111111111111121), deploy key AKIAIOSFODNN7EXAMPLE"
    )


class Contact(BaseModel):
    emails: list[str]


class Profile(BaseModel):
    contact: Contact
    card: str


@server.tool()
def profile() -> Profile:
    """A customer record, as structured content."""
    record("profile", {})
    return Profile(contact=Contact(emails=["bob@example.net"]), card="5555-5555-5555-4444")


@server.tool()
def run_sql(query: str) -> str:
    """Run a query (it only records it)."""
    record("run_sql", {"query": query})
    return "ok"


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    record("echo", {"text": text})
    return text


if __name__ == "__main__":
    server.run("stdio")
