"""Drive the wrapper with the official MCP Python SDK and validate results.

Usage: sdk_check.py MODE WRAPPER [ARG...]

MODE is `live` (the daemon is up: list the tools, then call every one with
valid arguments: the scripted calls below for the tools the release lists,
then each listed tool not called yet with arguments made from its input
schema's required properties), `degraded` (the daemon is down: call the five tools the
CLI answers) or `list` (only start the server and list its tools). The wrapper is started by the SDK's stdio client with this
process's environment. Every successful result is validated twice against
the tool's outputSchema: by the SDK itself (ClientSession.call_tool raises
on a mismatch) and explicitly with jsonschema's validator for the schema's
draft. One JSON object per call is printed on stdout, then a summary line:

  {"case": ..., "tool": ..., "ok": bool, "error": str|null,
   "source": str|null, "ms": float}
  {"summary": true, "tools": [names in listed order], "failed": n,
   "skipped": [scripted tools the release does not list]}
"""

import asyncio
import json
import os
import sys
import time
import uuid

from jsonschema import validators
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def emit(obj):
    print(json.dumps(obj), flush=True)


def example(schema):
    """A value the property's schema accepts: its default, its first enum
    value, else the simplest value of its (first) type."""
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    return {"string": "e2e", "boolean": False, "array": [], "object": {}}.get(kind)


class Run:
    def __init__(self, session, listed):
        self.session = session
        self.schemas = {t.name: t.output_schema for t in listed}
        self.inputs = {t.name: t.input_schema for t in listed}
        self.called = set()
        self.skipped = []
        self.failed = 0
        self.results = {}

    async def call_the_rest(self):
        """Every listed tool not called yet, with its required arguments."""
        for tool, schema in self.inputs.items():
            if tool in self.called:
                continue
            properties = schema.get("properties", {})
            args = {name: example(properties.get(name, {})) for name in schema.get("required", [])}
            await self.call(f"listed-{tool}", tool, args)

    async def call(self, case, tool, args):
        if tool not in self.schemas:
            # A scripted call of a tool this release does not list.
            self.skipped.append(tool)
            return {}
        self.called.add(tool)
        t0 = time.monotonic()
        error = None
        structured = None
        try:
            result = await self.session.call_tool(tool, args)
            if result.is_error:
                text = " ".join(getattr(c, "text", "") for c in result.content)
                raise RuntimeError(f"tool error: {text}")
            structured = result.structured_content
            schema = self.schemas[tool]
            problems = []
            if schema is not None:
                validator = validators.validator_for(schema)(schema)
                problems = sorted(validator.iter_errors(structured), key=str)
            if problems:
                raise RuntimeError(f"outputSchema mismatch: {problems[0].message}")
        except Exception as e:  # every failure is reported, none ends the run
            error = f"{type(e).__name__}: {e}"
            self.failed += 1
        emit({
            "case": case,
            "tool": tool,
            "text": args.get("text") if tool == "memory_capture" else None,
            "ok": error is None,
            "error": error,
            "source": (structured or {}).get("_source") if isinstance(structured, dict) else None,
            "ms": round((time.monotonic() - t0) * 1000, 1),
        })
        self.results[case] = structured
        return structured or {}


async def live(run):
    tag = uuid.uuid4().hex[:8]
    first = await run.call("capture", "memory_capture", {
        "text": f"The billing service {tag} settles invoices nightly in UTC.",
        "session_id": f"e2e-{tag}", "tier": "episodic", "role": "user",
        "cue": "billing schedule", "epistemic_status": "fact",
        "salience_level": "notable", "focus": "billing", "goal": "check the e2e kit",
        "next_action": "recall it",
    })
    second = await run.call("capture-2", "memory_capture", {
        "text": f"Invoices for tenant {tag} are exported as CSV every Monday.",
        "role": "assistant",
    })
    await run.call("capture-short", "memory_capture", {"text": "too short"})
    await run.call("capture-again", "memory_capture", {
        "text": f"The billing service {tag} settles invoices nightly in UTC.",
    })
    await run.call("recall", "memory_recall", {"cue": "when are invoices settled", "budget_tokens": 800})
    await run.call("search", "memory_search", {"query": "billing invoices", "k": 5})
    await run.call("structural", "memory_recall_structural", {})
    await run.call("structural-query", "memory_recall_structural",
                   {"structure_query": {"agent": "billing"}, "max_records": 100})
    ids = [r for r in (first.get("record_id"), second.get("record_id")) if r]
    await run.call("reinforce", "memory_reinforce", {"ids": ids, "session_id": f"e2e-{tag}"})
    if ids:
        await run.call("contradict", "memory_contradict", {
            "id": ids[0], "new_fact": f"The billing service {tag} now settles invoices hourly.",
            "epistemic_status": "fact",
        })
    await run.call("consolidate", "memory_consolidate", {"session_id": f"e2e-{tag}"})
    await run.call("profile-get-all", "profile_get_set", {"operation": "get"})
    await run.call("profile-set", "profile_get_set",
                   {"operation": "set", "knob": "wake_depth", "value": "standard"})
    await run.call("profile-get", "profile_get_set", {"operation": "get", "knob": "wake_depth"})
    await run.call("curiosity", "curiosity_pending", {})
    await run.call("schemas", "schema_list", {"confidence_min": 0.0})
    await run.call("events", "events_query", {"kind": "session_started", "limit": 10})
    await run.call("topology", "topology", {})
    await run.call("episodes", "episodes_recent", {"n": 5})
    await run.call("temporal", "memory_temporal_recall", {
        "cue": "billing", "as_of": "2099-01-01T00:00:00Z",
        "changed_since": "2000-01-01T00:00:00Z", "limit": 5,
    })
    await run.call("claim", "claim_check", {"cue": f"the billing service {tag} settles nightly"})
    await run.call_the_rest()


async def degraded(run):
    tag = uuid.uuid4().hex[:8]
    await run.call("degraded-recall", "memory_recall", {"cue": "billing invoices"})
    await run.call("degraded-search", "memory_search", {"query": "billing", "k": 3})
    await run.call("degraded-episodes", "episodes_recent", {"n": 3})
    await run.call("degraded-temporal", "memory_temporal_recall",
                   {"as_of": "2099-01-01T00:00:00Z", "limit": 3})
    await run.call("degraded-capture", "memory_capture", {
        "text": f"Written while the daemon {tag} was down, through the CLI.",
        "session_id": f"e2e-{tag}",
    })


async def main():
    mode, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            run = Run(session, listed.tools)
            calls = {"live": live, "degraded": degraded}.get(mode)
            if calls:
                await calls(run)
            emit({"summary": True, "tools": [t.name for t in listed.tools], "failed": run.failed,
                  "skipped": run.skipped})


if __name__ == "__main__":
    asyncio.run(main())
