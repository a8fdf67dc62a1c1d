"""A schemathesis check of toolgate's own (loaded by schemathesis.toml's `hooks`).

`POST /tools/{tool}/call` with arguments the tool's input schema allows may still be refused
with 422 by the tool itself (schemathesis.toml says why). What must never happen is the
gateway's own schema check refusing them: its 422 lists each violation in `details.errors`,
and such an answer to schema-valid arguments means the document and the gateway disagree.
"""

import schemathesis


@schemathesis.check
def schema_valid_arguments_pass_the_schema_check(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 422:
        return None
    if not case.operation.path.endswith("/call"):
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    errors = (body.get("details") or {}).get("errors") if isinstance(body, dict) else None
    if errors:
        raise AssertionError(
            f"schema-valid arguments were refused by the gateway's schema check: {errors}"
        )
    return None


@schemathesis.check
def a_gateway_timeout_is_the_requested_deadline(ctx, response, case):
    """A 504 of a tool call is the ToolError `timeout`, for a call given a deadline."""
    if response.status_code != 504 or not case.operation.path.endswith("/call"):
        return None
    try:
        body = response.json()
    except ValueError:
        body = None
    kind = body.get("kind") if isinstance(body, dict) else None
    if kind != "timeout":
        raise AssertionError(f"a 504 that is not the ToolError `timeout`: {response.text[:500]}")
    return None
