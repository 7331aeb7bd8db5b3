"""The log commands that wait (log-format §10.4, log-format §10.5): ``tail`` (following a log
with ``-f``) and ``fork`` (through the store), each an async function of the parsed arguments
and an ``Env``, run under ``trio.run``. Apart from ``_commands`` so that the read-only commands
never load trio.

Reading runs in worker threads, abandoned on Ctrl-C since reading never writes. Only ``fork``
writes, and only a new file.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import trio

from ..errors import ForkError, InvalidSessionId, SessionNotFound
from ..format import Event, check_session_id
from ..reader import iter_events, read_header, tail
from ..store import SessionRootError, SessionStore
from ._commands import (
    CommandFailed,
    Env,
    check_root,
    encoding,
    file_size,
    layout,
    not_found_message,
    progress,
    resolve,
)
from ._parser import UsageError
from ._render import event_line, fork_lines, json_text, last_turn_end, open_turn_hint

T = TypeVar("T")

TAIL_BATCH = 4096  # events read per worker-thread call by `tail --from`


async def _in_thread(fn: Callable[[], T]) -> T:
    # Reading never writes, so a Ctrl-C may abandon the worker thread.
    return await trio.to_thread.run_sync(fn, abandon_on_cancel=True)


# --------------------------------------------------------------------------- tail


def _emit(env: Env, event: Event, as_json: bool) -> None:
    env.print(event.to_json().decode("utf-8") if as_json else event_line(event, zone=env.zone))


async def _print_from(env: Env, path: Path, start_seq: int, as_json: bool) -> int:
    """Print every committed event from ``start_seq`` as it is read, in batches, so memory stays
    bounded by a batch (log-format §11); return the seq to follow from."""
    events = iter_events(path, start_seq=start_seq)
    next_seq = start_seq
    while batch := await _in_thread(lambda: list(itertools.islice(events, TAIL_BATCH))):
        for event in batch:
            _emit(env, event, as_json)
        next_seq = batch[-1].seq + 1
    return next_seq


async def _print_last(env: Env, path: Path, label: str, count: int, as_json: bool) -> int:
    """Print the last ``count`` committed events; return the seq to follow from."""

    def last_events() -> tuple[list[Event], int]:
        last: collections.deque[Event] = collections.deque(maxlen=count)
        seen = 0
        for event in iter_events(path):
            last.append(event)
            seen += 1
        return list(last), seen

    with progress(env, label, file_size(path)):
        first, next_seq = await _in_thread(last_events)
    for event in first:
        _emit(env, event, as_json)
    return next_seq


async def cmd_tail(args: argparse.Namespace, env: Env) -> int:
    path, id = resolve(args.log, env)
    if id is not None:
        check_root(env)
    try:
        if id is not None:
            # The identity rule of log-format §4.2 for a log named by id (tail reads by path).
            await _in_thread(lambda: read_header(path, expected_id=id))
        if args.from_seq is not None:
            next_seq = await _print_from(env, path, args.from_seq, args.json)
        else:
            next_seq = await _print_last(env, path, id or str(path), args.lines, args.json)
    except SessionNotFound as exc:
        # Without -f a missing log is an error; -f waits for it to appear, like tail -F, in
        # a directory that exists (log-format §10.4).
        if not args.follow or not path.parent.is_dir():
            raise CommandFailed(not_found_message(env, args.log, exc)) from None
        env.warn(f"waiting for {path} to appear")
        next_seq = 0 if args.from_seq is None else args.from_seq
    env.out.flush()
    if args.follow:
        await _follow_until_interrupted(env, path, next_seq, args.json, id)
    return 0


async def _follow(env: Env, path: Path, start_seq: int, as_json: bool, id: str | None) -> None:
    following = tail(
        path,
        start_seq=start_seq,
        follow=True,
        on_truncate=lambda size: env.warn(f"log truncated to {size} bytes"),
        expected_id=id,
    )
    async with contextlib.aclosing(following):
        async for event in following:
            _emit(env, event, as_json)
            env.out.flush()


async def _follow_until_interrupted(env: Env, path: Path, start_seq: int, as_json: bool, id: str | None) -> None:
    """Follow until Ctrl-C (SIGINT), which ends the follow quietly (log-format §10.4).

    While following, SIGINT is received as a message, not raised as ``KeyboardInterrupt``: the
    follow's first wait imports parts of its watcher lazily, and a ``KeyboardInterrupt``
    raised inside an import that executes generated code marks the interpreter to kill itself
    with SIGINT at exit, so the command would end with that signal instead of status 0."""
    with trio.open_signal_receiver(signal.SIGINT) as interrupts:
        async with trio.open_nursery() as nursery:

            async def stop_on_interrupt() -> None:
                async for _ in interrupts:
                    nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_interrupt)
            await _follow(env, path, start_seq, as_json, id)
            nursery.cancel_scope.cancel()


# --------------------------------------------------------------------------- fork


async def cmd_fork(args: argparse.Namespace, env: Env) -> int:
    path, id = resolve(args.log, env)
    if args.id is not None:
        try:
            check_session_id(args.id)
        except InvalidSessionId as exc:
            raise UsageError(f"--id: {exc}") from None
    source: str | Path = id if id is not None else path
    try:
        store = SessionStore(
            env.root, layout=args.layout, compression=args.compression, dsh_default=env.dsh_default
        )
        _ = store.layout  # detect the target root now: a mixed or contradicted root fails here
    except (SessionRootError, ValueError) as exc:
        raise CommandFailed(str(exc)) from None
    try:
        with progress(env, id or str(path), file_size(path)):
            child = await store.fork(source, at=args.at, id=args.id)
    except SessionNotFound as exc:
        raise CommandFailed(not_found_message(env, args.log, exc)) from None
    except ForkError as exc:
        if exc.code != "OPEN_TURN":
            raise
        last_end = await _in_thread(lambda: last_turn_end(iter_events(path), args.at))
        raise CommandFailed(f"{exc} ({open_turn_hint(last_end)})") from None
    child_path = store.path(child.id)
    events = await _in_thread(lambda: sum(1 for _ in iter_events(child_path)))
    if args.json:
        env.print_json(
            {
                "id": child.id,
                "path": json_text(str(child_path)),
                "parentSession": child.parent_session,
                "seedLength": child.seed_length or 0,
                "events": events,
                "layout": layout(child_path),
                "encoding": encoding(child_path),
            }
        )
        return 0
    for line in fork_lines(child, str(child_path), events):
        env.print(line)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, Env], Awaitable[int]]] = {
    "tail": cmd_tail,
    "fork": cmd_fork,
}
