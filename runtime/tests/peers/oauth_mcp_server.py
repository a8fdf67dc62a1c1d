"""An MCP server on the official Python SDK (PyPI `mcp` 2.x) that is an OAuth 2.0 resource
server: every MCP request needs a bearer token from the issuer, checked with PyJWT against the
issuer's JWKS (found through its OpenID Connect discovery document).

Usage: .peers/venv/bin/python oauth_mcp_server.py --port N --issuer URL --resource URL
           [--transport streamable-http|sse]

Listens on 127.0.0.1:N only. The MCP endpoint is /mcp (streamable HTTP) or /sse (legacy
HTTP+SSE, messages to the endpoint it names). A token is accepted when its signature verifies
with a key of the issuer's JWKS (RS256 or ES256), `iss` is the issuer, `aud` is the resource
and it has not expired; otherwise the SDK answers HTTP 401 with
`WWW-Authenticate: Bearer error="invalid_token", resource_metadata="..."`.

  tool whoami        -> JSON text {"sub", "client_id", "aud", "scope", "iat", "exp"} of the
                        token that came with the call
  POST /admin/revoke -> every token accepted so far is refused from now on (HTTP 401);
                        answers {"revoked": N}
  GET /api/whoami    -> the same JSON as the tool, for a plain HTTP (OpenAPI) client: the
                        bearer token checked as above, else HTTP 401 with
                        `WWW-Authenticate: Bearer error="invalid_token"`

Every token checked prints a stderr line `RS-TOKEN ok sub=<sub> iat=<iat>` or
`RS-TOKEN refused <reason>`.
"""

import argparse
import json
import sys
import threading

import jwt
from jwt import PyJWKClient
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--issuer", required=True)
parser.add_argument("--resource", required=True)
parser.add_argument("--transport", default="streamable-http", choices=["streamable-http", "sse"])
args = parser.parse_args()

LOCK = threading.Lock()
ACCEPTED = set()
REVOKED = set()
JWKS = PyJWKClient(f"{args.issuer}/jwks", cache_keys=True, timeout=5)


def note(line):
    print(f"RS-TOKEN {line}", file=sys.stderr, flush=True)


class Verifier:
    async def verify_token(self, token: str):
        with LOCK:
            if token in REVOKED:
                note("refused revoked")
                return None
        try:
            key = JWKS.get_signing_key_from_jwt(token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=["RS256", "ES256"],
                audience=args.resource,
                issuer=args.issuer,
                options={"require": ["exp", "iss", "aud"]},
            )
        except Exception as e:  # every failure is a refusal, with its reason
            note(f"refused {type(e).__name__}: {e}")
            return None
        with LOCK:
            ACCEPTED.add(token)
        note(f"ok sub={claims.get('sub')} iat={claims.get('iat')}")
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id") or claims.get("sub") or "unknown"),
            scopes=str(claims.get("scope") or "").split(),
            expires_at=claims.get("exp"),
            resource=args.resource,
            subject=claims.get("sub"),
            claims=claims,
        )


server = MCPServer(
    "oauth-protected",
    token_verifier=Verifier(),
    auth=AuthSettings(issuer_url=args.issuer, resource_server_url=args.resource),
)


@server.tool()
def whoami() -> str:
    """The claims of the access token this call came with."""
    token = get_access_token()
    claims = (token.claims or {}) if token else {}
    keys = ["sub", "client_id", "aud", "scope", "iat", "exp"]
    return json.dumps({k: claims.get(k) for k in keys})


@server.custom_route("/api/whoami", methods=["GET"])
async def api_whoami(request: Request):
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    checked = await Verifier().verify_token(token.strip()) if scheme.lower() == "bearer" else None
    if checked is None:
        return JSONResponse(
            {"error": "invalid_token"},
            status_code=401,
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    keys = ["sub", "client_id", "aud", "scope", "iat", "exp"]
    return JSONResponse({k: (checked.claims or {}).get(k) for k in keys})


@server.custom_route("/admin/revoke", methods=["POST"])
async def revoke(_request: Request):
    with LOCK:
        REVOKED.update(ACCEPTED)
        n = len(ACCEPTED)
        ACCEPTED.clear()
    return JSONResponse({"revoked": n})


if __name__ == "__main__":
    server.run(args.transport, host="127.0.0.1", port=args.port)
