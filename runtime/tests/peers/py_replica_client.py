"""An MCP client on the official Python SDK (PyPI `mcp` 2.x) that makes many calls in one
connection, for the tests of gateway replicas behind a load balancer.

Opens one client over streamable HTTP to URL (with `X-API-Key: KEY` when KEY is not `-`), then
either runs the `initialize` handshake (MODE `initialize`: one session, `Mcp-Session-Id` on
every request) or probes `server/discover` (MODE `discover`: 2026-07-28 requests, no session),
and calls `calc` with `{i}+1` for i in 0..CALLS. Every call is checked (its structured result is
i+1); a failed call is recorded and the next one tried. Prints one JSON line:
{"mode", "version", "ok", "failed": [[i, "error"], ...first 5], "failures"}.

Usage: .peers/venv/bin/python py_replica_client.py URL KEY MODE CALLS
"""

import asyncio
import json
import logging
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, key: str, mode: str, calls: int) -> None:
    headers = {} if key == "-" else {"X-API-Key": key}
    ok, failed, version = 0, [], None
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                if mode == "initialize":
                    result = await session.initialize()
                    version = result.protocol_version
                else:
                    await session.discover()
                    version = session.protocol_version
                for i in range(calls):
                    try:
                        result = await asyncio.wait_for(
                            session.call_tool("calc", {"expression": f"{i}+1"}), timeout=20
                        )
                        value = (result.structured_content or {}).get("value")
                        if result.is_error or value != i + 1:
                            failed.append([i, f"unexpected result {result.model_dump(mode='json')}"])
                        else:
                            ok += 1
                    except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
                        failed.append([i, f"{type(e).__name__}: {e}"])
    print(
        json.dumps(
            {"mode": mode, "version": version, "ok": ok, "failures": len(failed), "failed": failed[:5]}
        ),
        flush=True,
    )


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    asyncio.run(
        asyncio.wait_for(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])), timeout=240)
    )
