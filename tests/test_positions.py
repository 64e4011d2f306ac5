"""Every position of a small game (`c4core.evaluation.positions`): the index and its rows."""

from __future__ import annotations

import numpy as np
import pytest

from c4core.evaluation.positions import position_index
from c4core.games import load

CONNECT3 = load("connect3-4x4")


def test_connect3_on_4x4_has_23930_positions_in_play_each_a_row() -> None:
    index = position_index(CONNECT3)
    assert len(index) == 23_930
    assert (np.diff(index.keys) > 0).all()  # sorted, no key twice
    assert [s.key() for s in index.states[:50]] == index.keys[:50].tolist()
    assert not any(s.is_terminal for s in index.states)
    picks = np.array([0, 17, len(index) - 1])
    assert index.rows(index.keys[picks]).tolist() == picks.tolist()


def test_a_finished_or_foreign_position_has_no_row() -> None:
    index = position_index(CONNECT3)
    won = CONNECT3.state_from_moves("11223")  # three in a row on the bottom
    assert won.is_terminal
    with pytest.raises(ValueError, match="not in Connect-3 on 4x4's table"):
        index.rows(np.array([won.key()]))


def test_a_game_too_large_to_enumerate_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import c4core.evaluation.positions as positions

    monkeypatch.setattr(positions, "MAX_POSITIONS", 100)
    position_index.cache_clear()
    try:
        with pytest.raises(ValueError, match="over 100 positions"):
            position_index(load("connect4", rows=3, cols=3, connect=3))
    finally:
        position_index.cache_clear()
