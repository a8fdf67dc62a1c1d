#!/usr/bin/env python3
"""toolgate as the client of an MCP conformance suite client scenario (`conformance client
--command "python3 conformance_oauth_client.py" --scenario auth/client-credentials-basic`).
Stdlib only.

The suite starts the scenario's MCP server and authorization server, then runs this command
with the server's URL as the last argument and the scenario's context (JSON: `client_id`,
`client_secret`) in the environment variable MCP_CONFORMANCE_CONTEXT. This writes a tools.yaml
with that server as an MCP source authenticating with those client credentials (no token URL:
toolgate discovers it from the server's metadata) and runs `$TOOLGATE_BIN --config FILE list`,
which connects, authenticates and lists the server's tools. Exits with toolgate's status.
"""

import json
import os
import subprocess
import sys
import tempfile

url = sys.argv[-1]
context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
client_id = context.get("client_id", "")
secret = context.get("client_secret", "")

with tempfile.TemporaryDirectory() as d:
    config = os.path.join(d, "tools.yaml")
    with open(config, "w", encoding="utf-8") as f:
        f.write(
            "version: 1\n"
            "tools:\n"
            "  mcp:\n"
            "    - id: conf\n"
            "      http:\n"
            f"        url: {json.dumps(url)}\n"
            f"        oauth2: {{client_id: {json.dumps(client_id)}, client_secret: \"${{CONF_SECRET}}\"}}\n"
        )
    env = dict(os.environ, CONF_SECRET=secret)
    done = subprocess.run(
        [os.environ["TOOLGATE_BIN"], "--config", config, "list"], env=env, timeout=25
    )
    sys.exit(done.returncode)
