"""An MCP client on the official Python SDK (PyPI `mcp` 2.x) over streamable HTTP that runs one
plan against a gateway in tool-search `meta` mode and prints what it saw as one JSON line.

The plan is a JSON object on stdin:

    {"search": [{"query": "...", "k": 5}, ...],
     "describe": [["name", ...], ...],
     "call": [{"name": "...", "arguments": {...}}, ...]}

Every step is a `tools/call` of the meta tools `search_tools`, `describe_tools` and `call_tool`.
The output has `list` (the names `tools/list` gave, every page), and per step of each kind the
result: `{"is_error": bool, "structured": ..., "text": "..."}`.

Usage: .peers/venv/bin/python py_search_client.py http://127.0.0.1:PORT/mcp API_KEY < plan.json
"""

import asyncio
import json
import logging
import sys

import httpx2
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client


def outcome(result) -> dict:
    text = "".join(getattr(c, "text", "") for c in result.content)
    return {
        "is_error": bool(result.is_error),
        "structured": result.structured_content,
        "text": text,
    }


async def main(url: str, key: str, plan: dict) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names, cursor = [], None
                while True:
                    params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                    page = await session.list_tools(params=params)
                    names.extend(t.name for t in page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
                out = {"list": names, "search": [], "describe": [], "call": []}
                for step in plan.get("search", []):
                    result = await session.call_tool("search_tools", step)
                    out["search"].append(outcome(result))
                for step in plan.get("describe", []):
                    result = await session.call_tool("describe_tools", {"names": step})
                    out["describe"].append(outcome(result))
                for step in plan.get("call", []):
                    result = await session.call_tool("call_tool", step)
                    out["call"].append(outcome(result))
                print(json.dumps(out), flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2], json.load(sys.stdin)), timeout=90))
