"""Data-parallel learner processes: one learner trained by several processes (its ranks), one
torch thread each, in a torch.distributed group talking gloo over loopback.

A small torch forward scales badly over threads (two threads measured 6-18x slower in search),
so a learner takes the second core as a second process instead, as PyTorch's
DistributedDataParallel does across GPUs. `c4core.learners.ppo` sums its ranks' gradients at every step;
`c4core.learners.alphazero` pools its ranks' self-play games and has rank 0 fit them on every
rank's core (`Ranks.every_core`). Who spawns the ranks and hands them their learner is
`c4core.league.processes`' business.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
from torch import distributed


@dataclass(frozen=True)
class Ranks:
    """This process's place among the data-parallel processes of one learner. With
    ``world > 1`` the caller has started torch.distributed's default process group of `world`
    processes; the default is a learner alone, which communicates with nobody."""

    rank: int = 0
    world: int = 1

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        """`values` summed over every rank, in place; alone, `values` as they are."""
        if self.world > 1:
            distributed.all_reduce(values)
        return values

    def mean(self, values: list[float]) -> list[float]:
        """Each of `values` averaged over the ranks (every rank passes as many)."""
        if self.world == 1:
            return values
        return (self.sum(torch.tensor(values, dtype=torch.float64)) / self.world).tolist()

    def gather(self, item: Any) -> list[Any]:
        """Every rank's `item` (picklable), in rank order, on every rank."""
        if self.world == 1:
            return [item]
        out: list[Any] = [None] * self.world
        distributed.all_gather_object(out, item)
        return out

    def share(self, module: torch.nn.Module) -> None:
        """Rank 0's parameters and buffers copied into every rank's `module`, in place."""
        if self.world == 1:
            return
        with torch.no_grad():
            tensors = [*module.parameters(), *module.buffers()]
            flat = torch.cat([t.detach().reshape(-1).float() for t in tensors])
            distributed.broadcast(flat, src=0)
            for t, part in zip(tensors, flat.split([t.numel() for t in tensors]), strict=True):
                t.copy_(part.view_as(t))

    @contextmanager
    def every_core(self) -> Iterator[None]:
        """For work rank 0 does alone while the other ranks wait for its result (the
        AlphaZero-style fit): rank 0 adds to its own torch threads one for each waiting rank
        (a rank's process has one thread, `c4core.league.processes`), the cores they leave
        idle, and goes back to its own after. A fit's batches are thousands of rows, large
        enough to scale over threads, unlike the search's forwards. Alone, or on another rank,
        nothing changes."""
        if self.world == 1 or self.rank != 0:
            yield
            return
        threads = torch.get_num_threads()
        torch.set_num_threads(threads + self.world - 1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)

    def seed(self, seed: int) -> int:
        """This rank's random stream: `seed` itself on rank 0, so a learner alone plays as before."""
        return seed if self.rank == 0 else (seed * 1_000_003 + self.rank) % 2**63


ALONE = Ranks()

RANK_TIMEOUT = timedelta(minutes=10)
"""How long a rank waits for the others, at the rendezvous or at a step, before it gives up."""


def rendezvous(world: int) -> distributed.TCPStore:
    """Where the `world` ranks of one learner meet: a TCPStore on 127.0.0.1 on a free port
    (its ``port``), kept by whoever starts the ranks for as long as they run."""
    return distributed.TCPStore(
        "127.0.0.1", 0, world, is_master=True, timeout=RANK_TIMEOUT, wait_for_workers=False
    )


@contextmanager
def joined(port: int, rank: int, world: int) -> Iterator[Ranks]:
    """This process as rank `rank` of `world` in torch.distributed's default group, met at the
    `rendezvous` on `port` and talking gloo over loopback (``lo``: the ranks share one machine,
    unless GLOO_SOCKET_IFNAME says otherwise); the group is left on exit."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    store = distributed.TCPStore("127.0.0.1", port, world, is_master=False, timeout=RANK_TIMEOUT)
    distributed.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=RANK_TIMEOUT)
    try:
        yield Ranks(rank, world)
    finally:
        distributed.destroy_process_group()
