"""A hostile stdio MCP server (plain Python, no SDK: it runs in a box with the system's
python3): ``evil_mcp.py MODE``. MODE ``names``: tools whose names carry path and shell
characters or collide once made wire-safe; ``many``: N tools listed over pages;
``huge``: a tool whose result is N bytes."""

import json
import sys

MODE = sys.argv[1]
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 0
PAGE = 500
NAMES = ["../../etc/passwd", "rm -rf /; echo", "$(id)", "a.b", "a_b", "x" * 200, "ok"]


def tool(name):
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    return {"name": name, "description": f"the tool {name}", "inputSchema": schema}


def tools(cursor):
    if MODE != "many":
        return {"tools": [tool(name) for name in NAMES]}
    start = int(cursor or 0)
    page = [tool(f"tool{n}") for n in range(start, min(start + PAGE, COUNT))]
    more = start + PAGE < COUNT
    return {"tools": page, **({"nextCursor": str(start + PAGE)} if more else {})}


def call(params):
    text = "A" * COUNT if MODE == "huge" else f"called {params['name']!r}"
    return {"content": [{"type": "text", "text": text}], "isError": False}


def answer(message):
    method = message.get("method")
    params = message.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "evil", "version": "0"},
        }
    if method == "tools/list":
        return tools(params.get("cursor"))
    if method == "tools/call":
        return call(params)
    return {}


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
