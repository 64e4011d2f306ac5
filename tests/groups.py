"""Test helper for a learner's data-parallel ranks run for real: two spawned processes in a
torch.distributed gloo group on loopback. Shared by the learners' test files; pytest puts this
folder on `sys.path`, so they import it as `groups`."""

from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Callable
from typing import Any

from c4core.learners.ranks import rendezvous


def in_group(target: Callable[..., None], *args: Any, world: int = 2) -> dict[int, Any]:
    """Run ``target(rank, port, *args, out)`` as each rank of a `world`-process group, every
    rank a spawned process that puts ``(rank, result)`` on the queue `out`; every rank's result,
    by rank. A rank that dies fails the calling test instead of hanging it."""
    meeting = rendezvous(world)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=target, args=(r, meeting.port, *args, out)) for r in range(world)]
    for proc in procs:
        proc.start()
    got: dict[int, Any] = {}
    while len(got) < len(procs):
        try:
            rank, result = out.get(timeout=1.0)
            got[rank] = result
        except queue.Empty:
            assert all(p.is_alive() or p.exitcode == 0 for p in procs), "a rank failed"
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    return got
