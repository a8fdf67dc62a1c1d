"""An MCP client on the official Python SDK (PyPI `mcp` 2.x) over streamable HTTP: connects to
the URL given, initializes, calls `calc` with `2+3`, prints the result's structured content as
one JSON line, and closes the session (the SDK sends DELETE). The SDK's own warnings go to
stderr, where a test can look for them.

Usage: .peers/venv/bin/python py_client.py http://127.0.0.1:PORT/mcp
"""

import asyncio
import json
import logging
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str) -> None:
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("calc", {"expression": "2+3"})
            print(json.dumps(result.structured_content), flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(asyncio.wait_for(main(sys.argv[1]), timeout=60))
