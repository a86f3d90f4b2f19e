"""An MCP client (PyPI `mcp`) against Clipforge, run by tests/mcp.rs: over
streamable HTTP (`/mcp`) and over stdio (`clipforge mcp`), it lists the
tools, creates a project from an uploaded file, reads it back, reads the
credits, and sees errors as tool errors. Prints one JSON line per transport:
{"transport", "project"}.
"""

import asyncio
import json
import os

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

BASE = os.environ["CLIPFORGE_URL"]
KEY = os.environ["MCP_KEY"]
READ_KEY = os.environ["MCP_READ_KEY"]
FILE_KEY = os.environ["MCP_FILE_KEY"]
BIN = os.environ["CLIPFORGE_BIN"]
NOBODY = "00000000-0000-4000-8000-000000000000"


def text(result):
    return result.content[0].text


async def exercise(session, transport):
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    expected = {"create_project", "get_project", "list_projects", "edit_clip",
                "find_more_clips", "list_integrations", "schedule_clip", "get_credits"}
    assert expected <= set(tools), sorted(tools)
    schema = tools["create_project"].input_schema
    assert {"sourceUrl", "fileKey", "title", "clipDurationPreset"} <= set(schema["properties"]), schema
    assert "$ref" not in json.dumps(schema), schema
    assert tools["get_project"].input_schema["required"] == ["projectId"]

    made = await session.call_tool("create_project", {
        "fileKey": FILE_KEY, "title": f"Made over {transport}", "clipDurationPreset": "15-30"})
    assert not made.is_error, text(made)
    project = json.loads(text(made))["projectId"]
    got = await session.call_tool("get_project", {"projectId": project})
    assert not got.is_error, text(got)
    assert json.loads(text(got))["project"]["title"] == f"Made over {transport}"
    credits = await session.call_tool("get_credits", {})
    assert "credits" in json.loads(text(credits)), text(credits)
    listed = await session.call_tool("list_projects", {"limit": 5})
    assert project in text(listed)
    # The API's errors come back as tool errors, in words.
    missing = await session.call_tool("get_project", {"projectId": NOBODY})
    assert missing.is_error and text(missing).startswith("404"), text(missing)
    bad = await session.call_tool("create_project", {"title": "neither a URL nor a file"})
    assert bad.is_error and text(bad).startswith("400"), text(bad)
    # More clips of a project still processing: 409, in words.
    early = await session.call_tool("find_more_clips", {"projectId": project, "count": 1})
    assert early.is_error and text(early).startswith("409"), text(early)
    assert "count" in tools["find_more_clips"].input_schema["properties"]
    print(json.dumps({"transport": transport, "project": project}), flush=True)


async def http():
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {KEY}"})
    async with streamable_http_client(f"{BASE}/mcp", http_client=client) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await exercise(session, "http")
    # A read-only key lists and reads, but cannot create.
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {READ_KEY}"})
    async with streamable_http_client(f"{BASE}/mcp", http_client=client) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            assert (await session.list_tools()).tools
            refused = await session.call_tool("create_project", {"fileKey": FILE_KEY})
            assert refused.is_error and "403 insufficient_scope" in text(refused), text(refused)


async def stdio():
    params = StdioServerParameters(command=BIN, args=["mcp", "--url", BASE],
                                   env={"CLIPFORGE_API_KEY": KEY, "RUST_LOG": "warn",
                                        "PATH": os.environ.get("PATH", "")})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await exercise(session, "stdio")


asyncio.run(http())
asyncio.run(stdio())
