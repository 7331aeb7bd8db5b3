"""Inputs that used to reach a traceback, each now a typed refusal that appends nothing (host §4.2,
host §4.3.1, host §4.3.4, host §4.3.6, host §5.3, host §8): working directories that cannot be
resolved, malformed persisted data found while resuming, and the listing of live sessions that
have no file yet."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.host.rpc_support import request, running_server


def not_a_directory(path: Path) -> dict[str, Any]:
    return {
        "code": -32603,
        "message": f"working directory does not exist or is not a directory: {path}",
        "data": {"code": "not-a-directory", "path": str(path)},
    }


@pytest.fixture
def unresolvable(tmp_path: Path) -> dict[str, Path]:
    """A self-symlink (``ln -s loop loop``) and a path whose last name is 300 characters long."""
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    return {"loop": loop, "long": tmp_path / ("x" * 300)}


@pytest.mark.parametrize("kind", ["loop", "long"])
async def test_a_working_directory_that_cannot_be_resolved_is_not_a_directory(
    tmp_path: Path, unresolvable: dict[str, Path], kind: str
) -> None:
    root = tmp_path / "root"
    target = unresolvable[kind]
    async with running_server(root, cwd=tmp_path) as s:
        await s.wire.send(
            request("s", "session/working-directory/set", {"sessionId": "a", "path": str(target)})
        )
        assert (await s.wire.reply("s"))["error"] == not_a_directory(target)
        await s.wire.send(request("g", "session/working-directory/get", {"sessionId": "a"}))
        assert (await s.wire.reply("g"))["result"] == {"cwd": str(tmp_path)}
    assert not root.exists() or list(root.iterdir()) == []


@pytest.mark.parametrize("kind", ["loop", "long"])
async def test_an_initialize_cwd_that_cannot_be_resolved_is_refused_and_changes_nothing(
    tmp_path: Path, unresolvable: dict[str, Path], kind: str
) -> None:
    root = tmp_path / "root"
    target = unresolvable[kind]
    async with running_server(root, cwd=tmp_path) as s:
        params = {"cwd": str(target), "provider": "scripted", "model": "other"}
        await s.wire.send(request("i", "initialize", params))
        assert (await s.wire.reply("i"))["error"] == not_a_directory(target)
        assert s.host.route.model == "scripted"  # the route is unchanged
        await s.wire.send(request("g", "session/working-directory/get", {"sessionId": "a"}))
        assert (await s.wire.reply("g"))["result"] == {"cwd": str(tmp_path)}
    assert not root.exists() or list(root.iterdir()) == []


async def test_an_initialize_cwd_that_does_not_exist_is_still_taken(tmp_path: Path) -> None:
    async with running_server(tmp_path / "root", cwd=tmp_path) as s:
        await s.wire.send(request("i", "initialize", {"cwd": str(tmp_path / "later")}))
        assert "result" in await s.wire.reply("i")
        assert s.host.cwd == tmp_path / "later"
