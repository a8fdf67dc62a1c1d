"""FastMCP's BM25 tool search on the search benchmark's corpus (the peer of toolgate's
`benches/benches/search.rs`): every tool of the corpus registered on one `FastMCP` server with
`BM25SearchTransform` (fastmcp 4.x, `fastmcp.server.transforms.search`), as its docs say:

    mcp = FastMCP("Server"); mcp.add_tool(...); mcp.add_transform(BM25SearchTransform(max_results=K))

and every query sent to the transform's `search_tools` tool through an in-memory
`fastmcp.Client`, the hits read from its result (the tool definitions, best first).

Run with the venv scripts/install-peers.sh makes:

    .peers/venv-fastmcp/bin/python benches/peers/search_fastmcp.py CORPUS.json K ROUNDS

CORPUS.json (written by the Rust side): {"tools": [{"name", "description", "input_schema"}],
"queries": [{"id", "text"}]}.

Measured, per query, as the process's CPU time (`time.process_time()`, what toolgate's side
measures too):

- `search_s`: the transform's `_search(tools, query)`, what `search_tools` runs to rank (its
  catalog check: a SHA-256 of every tool's searchable text, then the BM25 query), ROUNDS times;
- `query_s`: the BM25 index's `query(text, K)` alone, ROUNDS times;
- `build_s`: the first `search_tools` call (the index is built lazily there), once.

One JSON line on stdout: {"tools", "ranked": [[names…] per query], "search_s": [...],
"query_s": [...], "build_s", "fastmcp", "error"}.
"""

import asyncio
import json
import sys
import time
import traceback


async def run(path: str, k: int, rounds: int) -> dict:
    out = {"tools": None, "ranked": [], "search_s": [], "query_s": [], "error": None}
    try:
        import fastmcp
        from fastmcp import Client, FastMCP
        from fastmcp.server.transforms.search import BM25SearchTransform
        from fastmcp.tools.base import Tool, ToolResult

        out["fastmcp"] = fastmcp.__version__

        class CorpusTool(Tool):
            """A tool of the corpus: its definition only (never called here)."""

            async def run(self, arguments):  # noqa: ARG002
                return ToolResult(content="not called")

        with open(path, encoding="utf-8") as f:
            corpus = json.load(f)
        mcp = FastMCP("search-bench")
        tools = [
            CorpusTool(
                name=t["name"],
                description=t["description"] or None,
                parameters=t["input_schema"],
            )
            for t in corpus["tools"]
        ]
        for tool in tools:
            mcp.add_tool(tool)
        out["tools"] = len(tools)
        transform = BM25SearchTransform(max_results=k)
        mcp.add_transform(transform)
        queries = corpus["queries"]

        async with Client(mcp) as client:
            listed = await client.list_tools()
            assert sorted(t.name for t in listed) == ["call_tool", "search_tools"], listed
            t = time.process_time()
            first = await client.call_tool("search_tools", {"query": queries[0]["text"]})
            out["build_s"] = time.process_time() - t
            del first
            for q in queries:
                result = await client.call_tool("search_tools", {"query": q["text"]})
                hits = result.structured_content["result"]
                out["ranked"].append([h["name"] for h in hits])

        # The latencies on the catalog `search_tools` ranks (the tools registered above; the
        # index built by the first call is current, so `_search` only checks it and queries).
        index = transform._index
        for _ in range(rounds):
            for q in queries:
                t = time.process_time()
                await transform._search(tools, q["text"])
                out["search_s"].append(time.process_time() - t)
                t = time.process_time()
                index.query(q["text"], k)
                out["query_s"].append(time.process_time() - t)
    except Exception as e:  # noqa: BLE001 - recorded, the point of the run
        out["error"] = f"{type(e).__name__}: {e}"[:500]
        out["traceback_tail"] = traceback.format_exc().splitlines()[-3:]
    return out


if __name__ == "__main__":
    corpus_path = sys.argv[1]
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    print(json.dumps(asyncio.run(run(corpus_path, k, rounds))), flush=True)
