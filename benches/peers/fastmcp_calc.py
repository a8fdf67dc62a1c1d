"""FastMCP (PyPI fastmcp 4.x) server with a `calc` tool: the comparison peer of `toolgate serve`
in benches/benches/gateway.rs.

Same contract as toolgate's built-in `calc` for what the benchmark sends: argument
`{"expression": "<str>"}` (one required string), result `structuredContent`
`{"expression": <as given>, "value": <number>}` plus the same object as JSON text. The evaluator
is a tiny one (integers and floats, `+ - * /`, unary minus, parentheses; integer division
truncates toward zero, as toolgate's evalexpr does): the benchmark measures the server around the
tool, not the arithmetic.

Usage: python fastmcp_calc.py PORT  (listens on 127.0.0.1:PORT, streamable HTTP at /mcp)
"""

import ast
import logging
import operator
import sys
from typing import Annotated

from pydantic import BaseModel, Field

from fastmcp import FastMCP

mcp = FastMCP("fastmcp-calc")


class CalcResult(BaseModel):
    """The value of an expression."""

    expression: str = Field(description="The expression, as given.")
    value: int | float = Field(description="Its value.")


def _div(a, b):
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ValueError("division by zero")
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: _div}


def _eval(node):
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _eval(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    raise ValueError("only numbers, + - * / and parentheses are supported")


@mcp.tool
def calc(
    expression: Annotated[
        str, Field(description="The expression to evaluate, e.g. \"2 * (3 + 4)\".")
    ],
) -> CalcResult:
    """Evaluate an arithmetic expression (+ - * / and parentheses)."""
    if len(expression) > 4096:
        raise ValueError("expression rejected: longer than 4096 characters")
    return CalcResult(expression=expression, value=_eval(ast.parse(expression, mode="eval")))


if __name__ == "__main__":
    port = int(sys.argv[1])
    # No access log and no INFO lines: toolgate logs nothing per call either.
    logging.getLogger("uvicorn.access").disabled = True
    mcp.run(
        transport="http",
        host="127.0.0.1",
        port=port,
        show_banner=False,
        log_level="WARNING",
        uvicorn_config={"access_log": False},
    )
