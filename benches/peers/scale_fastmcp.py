"""FastMCP on the scale benchmark's synthetic OpenAPI documents (the peer of toolgate's
`benches/benches/scale.rs`): the same document of N operations, served by
`FastMCP.from_openapi`.

Run with the venv scripts/install-peers.sh makes (fastmcp 4.x), one document per process (a
fresh interpreter per size, so that memory is measured from the same start):

    .peers/venv-fastmcp/bin/python benches/peers/scale_fastmcp.py DOC.json REPEATS

Measured, in order, after the imports and the document's parse (not timed):

- startup: `FastMCP.from_openapi(spec, client)`, then the first `list_tools()` (FastMCP builds
  its tools lazily: the first listing is where they are made);
- rss_growth_bytes: the process's resident set after that first listing minus before
  `from_openapi` (`/proc/self/statm`);
- list_s: `list_tools()` again (warm), REPEATS times;
- body_s: what a `tools/list` answer costs: `list_tools()`, each tool's `to_mcp_tool()`, and the
  `ListToolsResult` serialized as JSON (`model_dump_json(by_alias=True, exclude_none=True)`),
  REPEATS times;
- lookup_s: `get_tool(name)` per call, the names taken in turn across the whole toolset (a
  fixed shuffle), averaged over 2 000 calls, 3 times.

Times are the process's CPU time (`time.process_time()`; FastMCP runs on one thread here),
as toolgate's side measures its own: on a shared machine the wall clock would count the time
other processes run.

One JSON line on stdout: {"tools", "startup_s", "from_openapi_s", "first_list_s",
"rss_growth_bytes", "list_s": [...], "body_s": [...], "lookup_s": [...], "body_bytes",
"error"}.
"""

import asyncio
import json
import os
import random
import sys
import time
import traceback


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


async def run(path: str, repeats: int) -> dict:
    out = {"tools": None, "error": None, "list_s": [], "body_s": [], "lookup_s": []}
    try:
        import httpx2
        import mcp.types as mcp_types
        from fastmcp import FastMCP

        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
        client = httpx2.AsyncClient(base_url="http://127.0.0.1:9")

        rss0 = rss_bytes()
        t0 = time.process_time()
        server = FastMCP.from_openapi(spec, client=client)
        t1 = time.process_time()
        tools = await server.list_tools()
        t2 = time.process_time()
        out["rss_growth_bytes"] = rss_bytes() - rss0
        out["from_openapi_s"] = t1 - t0
        out["first_list_s"] = t2 - t1
        out["startup_s"] = t2 - t0
        out["tools"] = len(tools)

        for _ in range(repeats):
            t = time.process_time()
            await server.list_tools()
            out["list_s"].append(time.process_time() - t)

        for _ in range(repeats):
            t = time.process_time()
            listed = await server.list_tools()
            sdk = [tool.to_mcp_tool(name=tool.name) for tool in listed]
            body = mcp_types.ListToolsResult(tools=sdk).model_dump_json(
                by_alias=True, exclude_none=True
            )
            out["body_s"].append(time.process_time() - t)
            out["body_bytes"] = len(body)

        names = [tool.name for tool in tools]
        random.Random(7).shuffle(names)
        calls = 2000
        for _ in range(3):
            t = time.process_time()
            for i in range(calls):
                found = await server.get_tool(names[i % len(names)])
                assert found is not None
            out["lookup_s"].append((time.process_time() - t) / calls)
        await client.aclose()
    except Exception as e:  # noqa: BLE001 - recorded, the point of the run
        out["error"] = f"{type(e).__name__}: {e}"[:500]
        out["traceback_tail"] = traceback.format_exc().splitlines()[-3:]
    return out


if __name__ == "__main__":
    doc = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(json.dumps(asyncio.run(run(doc, repeats))), flush=True)
