#!/usr/bin/env python3
"""Smoke test of a built wheel, as a user's first run sees it.

Installs the wheel into a fresh virtual environment (nothing else in it, no
package index), then:

1. `iai-mcp-wrapper --version` must print `iai-mcp-wrapper VERSION`, the
   workspace's version;
2. an MCP `initialize`, the `initialized` notification and `tools/list`,
   piped on standard input with no daemon anywhere (neither needs one), must
   be answered: the server's name and version, the protocol version asked
   for, and the built-in tool table; the wrapper must exit 0 at the end of
   its input. As a drop-in it names itself `iai-mcp`, as iai-mcp's own
   wrapper does, with its own name and version in the description.

Usage: wheel_smoke.py WHEEL_OR_DIRECTORY [--version X.Y.Z]

A directory must hold exactly one `iai_mcp_wrapper-*.whl` (searched
recursively). Runs on Linux, macOS and Windows with the Python that runs
it (3.11 or newer, for tomllib). Exit status 0 when every check held.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import tomllib
import venv

DISTRIBUTION = "iai-mcp-wrapper"
SERVER_NAME = "iai-mcp"
PROTOCOL_VERSION = "2025-06-18"
# Tools of the built-in table every release since 3.3.0 serves.
EXPECTED_TOOLS = {"memory_recall", "memory_capture", "memory_search"}
ROOT = pathlib.Path(__file__).resolve().parents[2]


def workspace_version() -> str:
    with open(ROOT / "Cargo.toml", "rb") as manifest:
        return tomllib.load(manifest)["workspace"]["package"]["version"]


def find_wheel(given: pathlib.Path) -> pathlib.Path:
    if given.is_file():
        return given
    found = sorted(given.rglob("iai_mcp_wrapper-*.whl"))
    if len(found) != 1:
        sys.exit(f"wheel_smoke: expected one wheel under {given}, found {len(found)}: {found}")
    return found[0]


def program(env_dir: pathlib.Path, name: str) -> pathlib.Path:
    """A program of a virtual environment: bin/NAME, or Scripts\\NAME.exe on Windows."""
    if os.name == "nt":
        return env_dir / "Scripts" / f"{name}.exe"
    return env_dir / "bin" / name


def check(label: str, held: bool, detail: str) -> bool:
    print(f"{'pass' if held else 'FAIL'}: {label}: {detail}")
    return held


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="wheel-smoke-", ignore_cleanup_errors=True) as scratch:
        return smoke(pathlib.Path(scratch))


def smoke(scratch: pathlib.Path) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=pathlib.Path, help="the wheel, or a directory holding one")
    parser.add_argument("--version", help="the version expected (default: the workspace's)")
    args = parser.parse_args()
    wheel = find_wheel(args.wheel)
    version = args.version or workspace_version()
    print(f"wheel: {wheel.name} ({wheel.stat().st_size} bytes)")

    env_dir = scratch / "venv"
    venv.create(env_dir, with_pip=True)
    subprocess.run(
        [str(program(env_dir, "python")), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", "--no-index", "--no-deps", str(wheel)],
        check=True,
    )
    wrapper = program(env_dir, DISTRIBUTION)
    passed = check("installed", wrapper.is_file(), str(wrapper))
    if not passed:
        return 1

    # A home of its own, so nothing of the runner's user is read or written,
    # and a daemon socket path where nothing listens.
    home = scratch / "home"
    home.mkdir()
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        USERPROFILE=str(home),
        IAI_DAEMON_SOCKET_PATH=str(home / "absent.sock"),
        IAI_MCP_SURFACE="builtin",
        IAI_MCP_DOCTOR="off",
        IAI_MCP_DEGRADED="off",
    )
    env["PATH"] = os.pathsep.join([str(wrapper.parent), env.get("PATH", "")])

    said = subprocess.run(
        [str(wrapper), "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    first = said.stdout.strip()
    expected = f"{DISTRIBUTION} {version}"
    rest = first[len(expected):] if first.startswith(expected) else None
    passed &= check(
        "--version",
        said.returncode == 0 and rest is not None and (rest == "" or rest.startswith(",")),
        f"{first!r} (exit {said.returncode}; expected {expected!r} first)",
    )

    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "wheel-smoke", "version": "1"},
        }},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    stdin = "".join(json.dumps(r) + "\n" for r in requests)
    served = subprocess.run(
        [str(wrapper)], env=env, input=stdin, capture_output=True, text=True, timeout=120
    )
    replies = {}
    for line in served.stdout.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            passed &= check("stdout carries JSON only", False, repr(line[:200]))
            continue
        if "id" in message:
            replies[message["id"]] = message
    passed &= check("exit at the end of input", served.returncode == 0, f"exit {served.returncode}")

    init = replies.get(1, {}).get("result", {})
    server = init.get("serverInfo", {})
    passed &= check(
        "initialize",
        server.get("name") == SERVER_NAME
        and server.get("version") == version
        and str(server.get("description", "")).startswith(expected)
        and init.get("protocolVersion") == PROTOCOL_VERSION,
        f"serverInfo {server}, protocolVersion {init.get('protocolVersion')!r}",
    )
    tools = [t.get("name") for t in replies.get(2, {}).get("result", {}).get("tools", [])]
    missing = sorted(EXPECTED_TOOLS - set(tools))
    passed &= check(
        "tools/list",
        bool(tools) and not missing,
        f"{len(tools)} tools" + (f", missing {missing}" if missing else ""),
    )
    if not passed:
        print("wrapper stderr:\n" + served.stderr[-4000:])
    print(f"{'PASS' if passed else 'FAIL'}: {wheel.name}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
