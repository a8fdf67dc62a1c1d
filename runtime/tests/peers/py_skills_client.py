"""An MCP client on the official Python SDK (PyPI `mcp` 2.x) over streamable HTTP that lists a
gateway's resources and tools, reads resources and calls tools, and prints what it saw as one
JSON line.

The plan is a JSON object on stdin:

    {"read": ["skill://name/SKILL.md", ...],
     "call": [{"name": "load_skill", "arguments": {...}}, ...]}

The output has `resources` (every `resources/list` page: uri, name, description, mimeType),
`tools` (the names `tools/list` gave), per URI of `read` either `{"contents": [{"uri",
"mimeType", "text"}]}` or `{"error": {"code", "message"}}`, and per `call` step `{"is_error",
"structured", "text"}`.

Usage: .peers/venv/bin/python py_skills_client.py http://127.0.0.1:PORT/mcp < plan.json
"""

import asyncio
import json
import logging
import sys

import httpx2
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


async def main(url: str, plan: dict) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                resources, cursor = [], None
                while True:
                    params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                    page = await session.list_resources(params=params)
                    resources.extend(
                        {
                            "uri": str(r.uri),
                            "name": r.name,
                            "description": r.description,
                            "mimeType": r.mime_type,
                        }
                        for r in page.resources
                    )
                    cursor = page.next_cursor
                    if not cursor:
                        break
                tools = [t.name for t in (await session.list_tools()).tools]
                out = {"resources": resources, "tools": tools, "read": [], "call": []}
                for uri in plan.get("read", []):
                    try:
                        result = await session.read_resource(uri)
                        out["read"].append(
                            {
                                "contents": [
                                    {
                                        "uri": str(c.uri),
                                        "mimeType": c.mime_type,
                                        "text": getattr(c, "text", None),
                                    }
                                    for c in result.contents
                                ]
                            }
                        )
                    except MCPError as e:
                        out["read"].append(
                            {"error": {"code": e.error.code, "message": e.error.message}}
                        )
                for step in plan.get("call", []):
                    result = await session.call_tool(step["name"], step["arguments"])
                    text = "".join(getattr(c, "text", "") for c in result.content)
                    out["call"].append(
                        {
                            "is_error": bool(result.is_error),
                            "structured": result.structured_content,
                            "text": text,
                        }
                    )
                print(json.dumps(out), flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(asyncio.wait_for(main(sys.argv[1], json.load(sys.stdin)), timeout=90))
