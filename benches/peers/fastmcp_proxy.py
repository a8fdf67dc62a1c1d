"""A FastMCP (PyPI fastmcp 4.x) proxy in front of one stdio MCP server: the comparison peer of
`toolgate serve` fronting server-everything in benches/benches/gateway.rs.

FastMCP's documented way (`create_proxy` with an MCPConfig, what `fastmcp run mcp.json` does):
one server in the config, so its tools keep their own names (`echo`), as toolgate's source with
`prefix: false`. The backend runs as a child process over stdio (kept alive between requests,
FastMCP's default).

Usage: python fastmcp_proxy.py PORT COMMAND [ARGS...]
  e.g. python fastmcp_proxy.py 8000 node .../server-everything/dist/index.js stdio
"""

import logging
import sys

from fastmcp.server import create_proxy

if __name__ == "__main__":
    port = int(sys.argv[1])
    command, args = sys.argv[2], sys.argv[3:]
    config = {"mcpServers": {"everything": {"command": command, "args": args}}}
    proxy = create_proxy(config, name="fastmcp-proxy")
    # No access log and no INFO lines: toolgate logs nothing per call either.
    logging.getLogger("uvicorn.access").disabled = True
    proxy.run(
        transport="http",
        host="127.0.0.1",
        port=port,
        show_banner=False,
        log_level="WARNING",
        uvicorn_config={"access_log": False},
    )
