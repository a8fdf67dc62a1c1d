"""An MCP client on the official Python SDK (PyPI `mcp` 2.x) over streamable HTTP for the
gateway's virtual servers: it opens one session per endpoint given, lists each one's tools,
makes the calls of the plan, then calls one tool that changes the tool list and waits for
`notifications/tools/list_changed` on every session. It prints what it saw as one JSON line.

The plan is a JSON object on stdin:

    {"sessions": {"label": "http://127.0.0.1:PORT/mcp/ID", ...},
     "key": "API key",
     "calls": [{"session": "label", "name": "...", "arguments": {...}}, ...],
     "change": {"session": "label", "name": "...", "arguments": {...}},
     "expect_notified": ["label", ...],
     "quiet_s": 2}

After the change, it waits (at most 20 s) until every session in `expect_notified` got
`list_changed` (the positive control), then `quiet_s` more; the output says which sessions were
notified. Output: {"sessions": {label: {"server": {...}, "instructions": ..., "tools": [names],
"notified": bool}}, "calls": [{"is_error", "text", "kind"}], "waited_out": bool}.

Usage: .peers/venv/bin/python py_servers_client.py < plan.json
"""

import asyncio
import contextlib
import json
import logging
import sys

import httpx2
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client


async def main(plan: dict) -> None:
    headers = {"Authorization": f"Bearer {plan['key']}"}
    notified = {label: asyncio.Event() for label in plan["sessions"]}
    out = {"sessions": {}, "calls": [], "waited_out": False}
    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for label, url in plan["sessions"].items():
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=30))
            read, write = await stack.enter_async_context(streamable_http_client(url, http_client=http))

            async def on_message(message, label=label):
                # Notifications arrive as their own models (older SDKs wrapped them in `.root`).
                if isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
                    notified[label].set()

            session = await stack.enter_async_context(
                ClientSession(read, write, message_handler=on_message)
            )
            init = await session.initialize()
            info = init.server_info
            names, cursor = [], None
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                names.extend(t.name for t in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            sessions[label] = session
            out["sessions"][label] = {
                "server": {"name": info.name, "title": info.title},
                "instructions": init.instructions,
                "tools": names,
            }
        for call in plan.get("calls", []):
            result = await sessions[call["session"]].call_tool(call["name"], call.get("arguments", {}))
            meta = result.meta or {}
            error = meta.get("toolgate/error") or {}
            out["calls"].append({
                "is_error": bool(result.is_error),
                "text": "".join(getattr(c, "text", "") for c in result.content),
                "kind": error.get("kind") if isinstance(error, dict) else None,
            })
        change = plan.get("change")
        if change:
            await sessions[change["session"]].call_tool(change["name"], change.get("arguments", {}))
            try:
                await asyncio.wait_for(
                    asyncio.gather(*(notified[l].wait() for l in plan["expect_notified"])), 20
                )
            except asyncio.TimeoutError:
                out["waited_out"] = True
            await asyncio.sleep(plan.get("quiet_s", 2))
        for label in plan["sessions"]:
            out["sessions"][label]["notified"] = notified[label].is_set()
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(asyncio.wait_for(main(json.load(sys.stdin)), timeout=90))
