"""An MCP client on the official Python SDK (`mcp` 2.x on PyPI), driving
`aep mcp` over standard input and output as an MCP host does.

Run by `mcp_python.rs`: AEP_BIN names the `aep` binary, AEP_RELAY and
AEP_TOKEN the relay, AEP_MCP_SESSION the session. It lists the tools,
asks a form with `ask_human`, sends a notice, and prints one JSON line
per result on standard output for the test to check.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    server = StdioServerParameters(
        command=os.environ["AEP_BIN"],
        args=["mcp", "--session", os.environ["AEP_MCP_SESSION"]],
        env={
            "AEP_RELAY": os.environ["AEP_RELAY"],
            "AEP_TOKEN": os.environ["AEP_TOKEN"],
            "PATH": os.environ.get("PATH", ""),
        },
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            print(json.dumps({
                "server": init.server_info.name,
                "tools": sorted(t.name for t in tools.tools),
                "schemas": {t.name: t.input_schema for t in tools.tools},
            }), flush=True)
            asked = await session.call_tool("ask_human", {
                "prompt": "Which build should ship?",
                "fields": [
                    {"id": "branch", "type": "string", "label": "Branch", "required": True},
                    {"id": "jobs", "type": "number", "label": "Jobs", "min": 1, "max": 16},
                    {"id": "dry_run", "type": "boolean", "label": "Dry run first"},
                ],
                "timeout_s": 120,
            })
            print(json.dumps({
                "tool": "ask_human",
                "is_error": asked.is_error,
                "structured": asked.structured_content,
                "text": [c.text for c in asked.content if c.type == "text"],
            }), flush=True)
            told = await session.call_tool("notify", {"message": "Shipping fix/build"})
            print(json.dumps({"tool": "notify", "is_error": told.is_error}), flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(), timeout=180))
    except BaseException as e:  # the test shows standard error on a failure
        import traceback
        traceback.print_exception(e)
        sys.exit(1)
