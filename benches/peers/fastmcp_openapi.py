"""FastMCP's OpenAPI conversion timed on the big vendored documents (the comparison peer of
toolgate's `openapi` conversion).

Run with the venv scripts/install-peers.sh makes (fastmcp 4.2.3):

    .peers/venv-fastmcp/bin/python benches/peers/fastmcp_openapi.py [DOC ...]

For each document: parse it (JSON or YAML, timed alone), then time
`FastMCP.from_openapi(spec, httpx2.AsyncClient(base_url=...))` and listing its tools (the
provider builds its tools lazily, so the listing is timed too). One JSON line per document:
{"doc", "parse_s", "from_openapi_s", "list_tools_s", "tools", "operations", "error"}.
A construct FastMCP refuses is recorded in "error", not raised.
"""

import asyncio
import json
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DOCS = [
    "tests/specs/github/github-api.github.com-octokit-openapi-23.0.2.json",
    "tests/specs/stripe/stripe-spec3-2023-09-12.yaml",
]
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def parse(path: Path):
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def count_operations(spec) -> int:
    return sum(
        1
        for item in (spec.get("paths") or {}).values()
        if isinstance(item, dict)
        for method in item
        if method in METHODS
    )


async def run(doc: str) -> dict:
    out = {"doc": doc, "parse_s": None, "from_openapi_s": None, "list_tools_s": None,
           "tools": None, "operations": None, "error": None}
    try:
        import httpx2
        from fastmcp import FastMCP

        t0 = time.perf_counter()
        spec = parse(ROOT / doc)
        out["parse_s"] = round(time.perf_counter() - t0, 3)
        out["operations"] = count_operations(spec)

        client = httpx2.AsyncClient(base_url="http://127.0.0.1:9")
        t0 = time.perf_counter()
        server = FastMCP.from_openapi(spec, client=client)
        out["from_openapi_s"] = round(time.perf_counter() - t0, 3)

        t0 = time.perf_counter()
        tools = await server.list_tools()
        out["list_tools_s"] = round(time.perf_counter() - t0, 3)
        out["tools"] = len(tools)
        await client.aclose()
    except Exception as e:  # noqa: BLE001 - recorded, the point of the run
        out["error"] = f"{type(e).__name__}: {e}"[:500]
        out["traceback_tail"] = traceback.format_exc().splitlines()[-3:]
    return out


async def main(docs):
    for doc in docs:
        print(json.dumps(await run(doc)), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or DEFAULT_DOCS))
