"""A minimal MCP client for inside a box, stdlib only: ``python3 - URL METHOD [JSON]``
POSTs one JSON-RPC request over streamable HTTP (plain JSON or SSE answer) through the
box's network and prints ``STATUS BODY``; extra ``-H Name:Value`` items set headers."""

SCRIPT = r"""
import json, sys, urllib.request, urllib.error
url, method = sys.argv[1], sys.argv[2]
args = [a for a in sys.argv[3:] if not a.startswith("-H")]
params = json.loads(args[0]) if args else {}
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
for item in sys.argv[3:]:
    if item.startswith("-H"):
        name, _, value = item[2:].partition(":")
        headers[name] = value
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(urllib.request.Request(url, body, headers), timeout=30) as answer:
        status, text = answer.status, answer.read().decode()
except urllib.error.HTTPError as exc:
    status, text = exc.code, exc.read().decode()
except OSError as exc:
    status, text = 0, repr(exc)
for line in text.splitlines():
    if line.startswith("data:"):
        text = line[5:].strip()
print(status, text)
"""
