"""Data-parallel ranks (`c4core.learners.ranks`): what needs no process group. The groups
themselves run for real in the learners' tests (`groups.in_group`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from c4core.learners.ranks import ALONE, Ranks


@pytest.fixture
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_thread")
def test_rank_0_works_alone_on_every_ranks_thread_and_gives_them_back() -> None:
    inside = {}
    for name, ranks in {"rank 0": Ranks(0, 3), "rank 1": Ranks(1, 3), "alone": ALONE}.items():
        with ranks.every_core():
            inside[name] = torch.get_num_threads()
        assert torch.get_num_threads() == 1
    assert inside == {"rank 0": 3, "rank 1": 1, "alone": 1}
    with pytest.raises(RuntimeError, match="mid-fit"), Ranks(0, 2).every_core():
        raise RuntimeError("mid-fit")
    assert torch.get_num_threads() == 1  # given back when the work fails too
    torch.set_num_threads(2)  # rank 0 given two threads of its own (`c4 league --threads 2`)
    with Ranks(0, 3).every_core():
        assert torch.get_num_threads() == 4  # the two waiting ranks' one thread each, added
    assert torch.get_num_threads() == 2
