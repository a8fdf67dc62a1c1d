"""A desktop MCP client as Claude Desktop and Cursor are: reads a client configuration file
(`{"mcpServers": {NAME: {"command", "args", "env"}}}`), starts the server NAME over stdio with
the official Python SDK (PyPI `mcp`), lists its tools, calls `calc` with `6*7`, and prints one
JSON line: `{"tools": [names], "calc": structuredContent}`. The server runs in a fresh empty
folder, as a desktop client's servers do.

Usage: .peers/venv/bin/python py_desktop_client.py CONFIG.json NAME
"""

import asyncio
import json
import logging
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(config: str, name: str) -> None:
    with open(config, encoding="utf-8") as f:
        entry = json.load(f)["mcpServers"][name]
    with tempfile.TemporaryDirectory() as cwd:
        params = StdioServerParameters(
            command=entry["command"],
            args=entry.get("args", []),
            env=entry.get("env"),
            cwd=cwd,
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                result = await session.call_tool("calc", {"expression": "6*7"})
                print(
                    json.dumps(
                        {
                            "tools": [t.name for t in listed.tools],
                            "calc": result.structured_content,
                        }
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), timeout=60))
