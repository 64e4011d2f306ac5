"""Player specs (`c4core.players.make_player`): bots, the solver, checkpoints, and bad specs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from c4core.config import NetConfig
from c4core.evaluation.match import play_match
from c4core.games import ConnectFour
from c4core.games.connect4.bots import TacticalBot
from c4core.games.connect4.rules import STANDARD, Geometry, Position
from c4core.games.connect4.solver import PerfectBot
from c4core.games.players import RandomBot
from c4core.learners.net import Checkpoint, NetPlayer, PolicyValueNet
from c4core.players import make_player

SEED = 77
TINY = NetConfig(blocks=1, channels=8, value_hidden=8)
SMALL = Geometry(4, 4, 3)


@pytest.fixture
def tiny_checkpoint(tmp_path: Path) -> tuple[Path, PolicyValueNet]:
    torch.manual_seed(SEED)
    net = PolicyValueNet(TINY)
    path = tmp_path / "tiny.pt"
    Checkpoint.of(net, generation=2).save(path)
    return path, net


@pytest.mark.parametrize("spec, cls", [("random", RandomBot), ("tactical", TacticalBot)])
def test_scripted_bots(spec: str, cls: type) -> None:
    player = make_player(spec)
    assert type(player) is cls and player.name == spec
    assert player.kernel is not None
    assert make_player(spec) is not player  # a fresh player each time


def test_perfect_on_a_small_board() -> None:
    player = make_player("perfect", ConnectFour(SMALL))
    assert isinstance(player, PerfectBot) and player.name == "perfect"
    col = player.act_position(Position(geometry=SMALL), torch.Generator().manual_seed(SEED))
    assert 0 <= col < SMALL.cols


def test_perfect_refuses_the_standard_board() -> None:
    with pytest.raises(ValueError, match="16 cells"):
        make_player("perfect", ConnectFour(STANDARD))


def test_checkpoint_spec(tiny_checkpoint: tuple[Path, PolicyValueNet]) -> None:
    path, net = tiny_checkpoint
    player = make_player(str(path))
    assert isinstance(player, NetPlayer)
    assert player.name == "tiny" and player.greedy
    state = player.net.state_dict()
    assert all(torch.equal(state[k], v) for k, v in net.state_dict().items())
    # it plays: a legal match against random
    r = play_match(player, make_player("random"), 4, seed=SEED)
    assert r.a == "tiny" and r.games == 4


def test_checkpoint_without_the_pt_suffix(tiny_checkpoint: tuple[Path, PolicyValueNet]) -> None:
    path, _ = tiny_checkpoint
    plain = path.with_name("snapshot.ckpt")
    plain.write_bytes(path.read_bytes())
    player = make_player(str(plain))
    assert isinstance(player, NetPlayer) and player.name == "snapshot"


@pytest.mark.parametrize("spec", ["nope", "Random", "", "gen1", "tactical2"])
def test_unknown_spec_names_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ValueError) as err:
        make_player(spec)
    msg = str(err.value)
    assert repr(spec) in msg
    for form in ("random", "tactical", "perfect", ".pt"):
        assert form in msg


def test_missing_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no checkpoint"):
        make_player(str(tmp_path / "missing.pt"))


def test_garbage_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "junk.pt"
    path.write_text("hello")
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        make_player(str(path))


def test_checkpoint_for_another_board(tmp_path: Path) -> None:
    odd = Geometry(5, 6, 4)
    torch.manual_seed(SEED)
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8), ConnectFour(odd))
    path = tmp_path / "odd.pt"
    Checkpoint.of(net, ConnectFour(odd)).save(path)
    with pytest.raises(ValueError, match="plays"):
        make_player(str(path))  # the standard board by default
    assert isinstance(make_player(str(path), ConnectFour(odd)), NetPlayer)


def test_a_table_checkpoint_plays_as_its_table_and_refuses_search(tmp_path: Path) -> None:
    from c4core.games import load
    from c4core.learners.tabular import QTable, TablePlayer

    game = load("connect3-4x4")
    Checkpoint.of_table(QTable(game), generation=3).save(tmp_path / "t3.pt")
    player = make_player(str(tmp_path / "t3.pt"), game)
    assert isinstance(player, TablePlayer) and player.name == "t3"
    with pytest.raises(ValueError, match="search needs a network player"):
        make_player(f"{tmp_path / 't3.pt'}+mcts8", game)
