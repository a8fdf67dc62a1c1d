#!/usr/bin/env python3
"""toolgate as the client of an MCP conformance suite client scenario (`conformance client
--command "python3 conformance_oauth_client.py" --scenario auth/client-credentials-basic`).
Stdlib only.

The suite starts the scenario's MCP server and authorization server, then runs this command
with the server's URL as the last argument and the scenario's context (JSON: `client_id` and
`client_secret`, or `client_id`, `private_key_pem` and `signing_algorithm`) in the environment
variable MCP_CONFORMANCE_CONTEXT. This writes a tools.yaml with that server as an MCP source
authenticating with those client credentials (`private_key_jwt` when a key is given; no token
URL: toolgate discovers it from the server's metadata) and runs `$TOOLGATE_BIN --config FILE
list`, which connects, authenticates and lists the server's tools. Exits with toolgate's
status.
"""

import json
import os
import subprocess
import sys
import tempfile

url = sys.argv[-1]
context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
# Scenarios that expect a client to register itself give no credentials: toolgate does not
# register, so it presents made-up ones (their token endpoints take any client).
client_id = context.get("client_id") or "toolgate-conformance"
secret = context.get("client_secret") or "unregistered-client"

with tempfile.TemporaryDirectory() as d:
    config = os.path.join(d, "tools.yaml")
    if "private_key_pem" in context:
        key = os.path.join(d, "key.pem")
        with open(key, "w", encoding="utf-8") as f:
            f.write(context["private_key_pem"])
        alg = context.get("signing_algorithm", "RS256")
        proof = (
            f"client_auth: private_key_jwt, private_key: \"${{file:{key}}}\", "
            f"signing_algorithm: {alg}"
        )
    else:
        proof = 'client_secret: "${CONF_SECRET}"'
    with open(config, "w", encoding="utf-8") as f:
        f.write(
            "version: 1\n"
            "tools:\n"
            "  mcp:\n"
            "    - id: conf\n"
            "      http:\n"
            f"        url: {json.dumps(url)}\n"
            f"        oauth2: {{client_id: {json.dumps(client_id)}, {proof}}}\n"
        )
    env = dict(os.environ, CONF_SECRET=secret)
    done = subprocess.run(
        [os.environ["TOOLGATE_BIN"], "--config", config, "list"], env=env, timeout=25
    )
    sys.exit(done.returncode)
