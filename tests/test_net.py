"""The policy-value network, `NetPlayer` and checkpoints (`c4core.learners.net`).

Legality is checked on random live positions, many of them nearly full, and with a net whose
policy bias is rigged towards the full columns, so masking is what keeps the move legal, not
luck. Checkpoints are checked for an exact round trip and for refusing anything that is not a
plain c4core checkpoint without ever running code from the file.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest
import torch

from c4core.config import NetConfig
from c4core.games import ConnectFour, DotsAndBoxes
from c4core.games.connect4.batch import Boards
from c4core.games.connect4.rules import STANDARD, Geometry, Position
from c4core.games.dots_and_boxes.rules import Boxes
from c4core.learners.net import Checkpoint, NetPlayer, PolicyValueNet, fitted_optimizer_state, grown, two_hot

SEED = 1234
TINY = NetConfig(blocks=1, channels=8, value_hidden=8)
ODD = Geometry(5, 6, 4)


@pytest.fixture
def net() -> PolicyValueNet:
    torch.manual_seed(SEED)
    return PolicyValueNet(TINY).eval()


def live_position(rng: np.random.Generator, plies: int, geometry: Geometry = STANDARD) -> Position:
    """Up to `plies` random moves that never end the game, so the result is still live."""
    pos = Position(geometry=geometry)
    for _ in range(plies):
        moves = [c for c in pos.legal_moves() if not pos.play(c).is_terminal]
        if not moves:
            break
        pos = pos.play(int(rng.choice(moves)))
    return pos


@pytest.fixture(scope="module")
def positions() -> list[Position]:
    """Live positions from the empty board to nearly full ones (many with full columns)."""
    rng = np.random.default_rng(SEED)
    out = [live_position(rng, int(rng.integers(0, 42))) for _ in range(150)]
    out += [live_position(rng, 41) for _ in range(60)]
    return out


@pytest.fixture(scope="module")
def boards(positions: list[Position]) -> Boards:
    return Boards.from_positions(positions)


def test_fixture_positions_include_full_columns_and_deep_boards(positions: list[Position]) -> None:
    full_columns = sum(p.geometry.cols - len(p.legal_moves()) for p in positions)
    assert full_columns > 100
    assert max(p.ply for p in positions) >= 36
    assert all(not p.is_terminal for p in positions)


def test_masked_logits_never_favour_an_illegal_column(net: PolicyValueNet, boards: Boards) -> None:
    legal = boards.legal()
    # rig the policy head towards every column, full or not: only the mask can stop it
    with torch.no_grad():
        net.policy_fc.bias.copy_(torch.tensor([1e4, -1e4, 1e4, -1e4, 1e4, -1e4, 1e4]))
        logits, _ = net(boards.planes(), legal)
        probs, _ = net.evaluate(boards)
    chosen = logits.argmax(1)
    assert bool(legal.gather(1, chosen[:, None]).all())
    assert bool((probs[~legal] == 0).all())
    assert torch.allclose(probs.sum(1), torch.ones(len(boards)))
    # and the illegal logits sit far below every legal one
    assert bool(logits[~legal].max() < logits[legal].min())


def test_values_are_in_range_and_shapes_follow_the_config(net: PolicyValueNet, boards: Boards) -> None:
    probs, values = net.evaluate(boards)
    assert probs.shape == (len(boards), 7)
    assert values.shape == (len(boards),)
    assert bool(((values >= -1) & (values <= 1)).all())
    # huge weights saturate tanh but never leave the range
    with torch.no_grad():
        net.value_fc2.weight.mul_(1e4)
    _, values = net.evaluate(boards)
    assert bool(((values >= -1) & (values <= 1)).all())


def test_net_on_a_non_standard_board() -> None:
    torch.manual_seed(SEED)
    odd_net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8), ConnectFour(ODD))
    rng = np.random.default_rng(SEED)
    b = Boards.from_positions([live_position(rng, k, ODD) for k in (0, 10, 29)])
    probs, values = odd_net.evaluate(b)
    assert probs.shape == (3, 6) and values.shape == (3,)
    assert bool((probs[~b.legal()] == 0).all())


def test_bad_net_config_is_rejected() -> None:
    for bad in (dict(blocks=-1), dict(channels=0), dict(value_hidden=0)):
        with pytest.raises(ValueError, match="bad network size"):
            NetConfig(**bad)
    for bins in (1, -3):
        with pytest.raises(ValueError, match="value_bins must be 0"):
            NetConfig(value_bins=bins)


def test_two_hot_targets_are_distributions_whose_mean_is_the_target() -> None:
    support = torch.linspace(-1, 1, 19)
    target = torch.cat((torch.rand(200, generator=torch.Generator().manual_seed(SEED)) * 2 - 1, support))
    dist = two_hot(target, support)
    assert bool((dist >= 0).all()) and torch.allclose(dist.sum(1), torch.ones(len(target)))
    assert torch.allclose(dist @ support, target, atol=1e-6)
    assert bool(((dist > 0).sum(1) <= 2).all())  # only the two nearest values
    on_support = dist[200:]
    assert torch.allclose(on_support, torch.eye(19), atol=1e-5)  # a value of the support is one-hot
    assert torch.equal(two_hot(torch.tensor([-3.0, 2.0]), support)[:, [0, -1]], torch.eye(2))


def test_a_categorical_value_head_is_the_mean_of_its_values_and_fits_by_cross_entropy(
    boards: Boards,
) -> None:
    torch.manual_seed(SEED)
    net = PolicyValueNet(replace(TINY, value_bins=5)).eval()
    assert net.value_fc2.out_features == 5 and "value_support" not in net.state_dict()
    _, head = net.heads(boards.planes(), boards.legal())
    _, values = net.evaluate(boards)
    assert torch.allclose(values, torch.softmax(head, 1) @ torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0]))
    assert bool(((values >= -1) & (values <= 1)).all())
    # fitted to a target between two values, the head puts its weight on those two
    target = torch.full((len(boards),), 0.25)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    before = float(net.value_loss(head, target))
    for _ in range(200):
        loss = net.value_loss(net.heads(boards.planes(), boards.legal())[1], target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    head = net.heads(boards.planes(), boards.legal())[1].detach()
    assert float(loss) < before
    assert torch.allclose(net.value_of(head), target, atol=0.05)
    assert bool((torch.softmax(head, 1)[:, 2:4].sum(1) > 0.9).all())
    # a scalar head's loss is the squared error of its value, as before
    scalar = PolicyValueNet(TINY)
    head = scalar.heads(boards.planes(), boards.legal())[1]
    assert torch.equal(
        scalar.value_loss(head, target), torch.nn.functional.mse_loss(scalar.value_of(head), target)
    )


def test_a_categorical_head_round_trips_through_a_checkpoint(tmp_path: Path, boards: Boards) -> None:
    torch.manual_seed(SEED)
    net = PolicyValueNet(replace(TINY, value_bins=7), DotsAndBoxes(Boxes(2, 2))).eval()
    Checkpoint.of(net).save(tmp_path / "c.pt")
    back = Checkpoint.load(tmp_path / "c.pt")
    assert back.net_config == net.config
    b = net.game.new_batch(3)
    assert torch.equal(back.build().evaluate(b)[1], net.evaluate(b)[1])
    assert grown(net, 2, 16).evaluate(b)[1].allclose(net.evaluate(b)[1], atol=1e-6)


def test_greedy_player_is_deterministic(net: PolicyValueNet, boards: Boards) -> None:
    player = NetPlayer(net, greedy=True)
    first = player.act(boards, torch.Generator().manual_seed(1))
    again = player.act(boards, torch.Generator().manual_seed(2))
    assert torch.equal(first, again)
    assert bool(boards.legal().gather(1, first[:, None]).all())
    # a single position gives the same move as its row in the batch
    pos = Position.from_moves("4453")
    assert player.act_position(pos) == player.act_position(pos)


def test_sampled_player_respects_legality(net: PolicyValueNet, boards: Boards) -> None:
    legal = boards.legal()
    for temperature in (0.25, 1.0, 4.0):
        player = NetPlayer(net, greedy=False, temperature=temperature)
        gen = torch.Generator().manual_seed(SEED)
        for _ in range(20):
            cols = player.act(boards, gen)
            assert bool(legal.gather(1, cols[:, None]).all())


def test_sampled_player_is_seeded_and_actually_samples(net: PolicyValueNet) -> None:
    player = NetPlayer(net, greedy=False, temperature=1.0)
    empty = Boards(200)
    a = player.act(empty, torch.Generator().manual_seed(7))
    b = player.act(empty, torch.Generator().manual_seed(7))
    assert torch.equal(a, b)
    assert len(set(a.tolist())) > 1  # an untrained net's policy is spread over the columns


# ---- checkpoints ------------------------------------------------------------------------------
def _adam_after_one_step(net: PolicyValueNet, geometry: Geometry) -> torch.optim.Adam:
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    b = Boards(4, geometry)
    logits, value = net(b.planes(), b.legal())
    (logits.logsumexp(1).sum() + value.sum()).backward()
    opt.step()
    return opt


def _same(a: object, b: object) -> bool:
    """Deep equality that compares tensors by value."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_checkpoint_round_trip_is_exact(tmp_path: Path) -> None:
    torch.manual_seed(SEED)
    config = NetConfig(blocks=1, channels=8, value_hidden=8)
    net = PolicyValueNet(config, ConnectFour(ODD))
    opt = _adam_after_one_step(net, ODD)
    ckpt = Checkpoint.of(
        net, ConnectFour(ODD), generation=3, optimizer=opt, train_config={"lr": 0.001, "tag": "x"}
    )
    path = tmp_path / "sub" / "snap.pt"
    ckpt.save(path)
    assert path.is_file()
    assert not list(path.parent.glob("*.tmp"))  # the temporary file was renamed away

    back = Checkpoint.load(path)
    assert back.net_config == config
    assert back.geometry == ODD and back.game == ConnectFour(ODD)
    assert back.generation == 3
    assert back.train_config == {"lr": 0.001, "tag": "x"}
    assert _same(back.model, net.state_dict())
    assert _same(back.optimizer, opt.state_dict())
    # the rebuilt net plays exactly like the original, and the optimizer state loads back
    b = Boards.from_positions([Position.from_moves("445", ODD)])
    assert torch.equal(back.build().evaluate(b)[0], net.evaluate(b)[0])
    opt2 = torch.optim.Adam(back.build().parameters(), lr=1e-3)
    opt2.load_state_dict(back.optimizer)


def test_checkpoint_without_optimizer_round_trips(tmp_path: Path, net: PolicyValueNet) -> None:
    Checkpoint.of(net).save(tmp_path / "a.pt")
    back = Checkpoint.load(tmp_path / "a.pt")
    assert back.optimizer is None and back.generation == 0 and back.geometry == STANDARD
    assert back.train_config == {}


def test_checkpoint_of_copies_the_weights(net: PolicyValueNet) -> None:
    ckpt = Checkpoint.of(net)
    with torch.no_grad():
        net.stem.weight.add_(1.0)
    assert not torch.equal(ckpt.model["stem.weight"], net.stem.weight)


_SENTINEL_WRITES: list[str] = []


def _would_run(path: str) -> None:  # pragma: no cover - must never run
    _SENTINEL_WRITES.append(path)
    Path(path).write_text("code from a checkpoint ran")


class _Evil:
    """Unpickling this calls `_would_run`: exactly what weights_only loading must refuse."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (_would_run, (self.path,))


def test_load_refuses_pickled_objects_without_running_them(tmp_path: Path) -> None:
    sentinel = tmp_path / "ran.txt"
    for i, payload in enumerate(
        (_Evil(str(sentinel)), {"format": 1, "model": _Evil(str(sentinel))}, Geometry(4, 4, 3))
    ):
        path = tmp_path / f"evil{i}.pt"
        torch.save(payload, path)
        with pytest.raises(ValueError, match="not a readable checkpoint") as err:
            Checkpoint.load(path)
        assert str(path) in str(err.value)
    assert not sentinel.exists() and not _SENTINEL_WRITES


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no checkpoint at"):
        Checkpoint.load(tmp_path / "missing.pt")


@pytest.mark.parametrize(
    "content", [b"", b"not a checkpoint at all", b"PK\x03\x04garbage", bytes(range(256)) * 4]
)
def test_load_garbage_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "garbage.pt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        Checkpoint.load(path)


@pytest.mark.parametrize("payload", [[1, 2, 3], {"format": 2}, {"model": {}}, torch.zeros(3)])
def test_load_foreign_torch_file(tmp_path: Path, payload: object) -> None:
    path = tmp_path / "foreign.pt"
    torch.save(payload, path)
    with pytest.raises(ValueError, match="not a c4core checkpoint"):
        Checkpoint.load(path)


def test_load_a_directory_is_a_value_error(tmp_path: Path) -> None:
    (tmp_path / "dir.pt").mkdir()
    with pytest.raises(ValueError):
        Checkpoint.load(tmp_path / "dir.pt")


@pytest.mark.parametrize(
    "payload",
    [
        {"format": 1},
        {
            "format": 1,
            "model": {},
            "net_config": {"blocks": 1, "bogus": 3},
            "geometry": {},
            "generation": 0,
            "optimizer": None,
            "train_config": {},
        },
    ],
)
def test_load_incomplete_c4core_dict_is_a_value_error(tmp_path: Path, payload: dict) -> None:
    path = tmp_path / "incomplete.pt"
    torch.save(payload, path)
    with pytest.raises(ValueError):
        Checkpoint.load(path)


def test_grown_net_computes_the_same_and_every_new_weight_learns(net: PolicyValueNet, boards: Boards) -> None:
    big = grown(net, net.config.blocks + 1, net.config.channels * 2, torch.Generator().manual_seed(3))
    assert (big.config.blocks, big.config.channels) == (net.config.blocks + 1, net.config.channels * 2)
    p0, v0 = net.evaluate(boards)
    p1, v1 = big.evaluate(boards)
    assert torch.allclose(p0, p1, atol=1e-6) and torch.allclose(v0, v1, atol=1e-6)
    # the first gradient reaches every weight but the new block's first convolution, which
    # starts learning once its block's zeroed second convolution has moved
    logits, value = big.train()(boards.planes(), boards.legal())
    (torch.log_softmax(logits, 1)[:, 3].mean() + value.pow(2).mean()).backward()
    frozen = [n for n, w in big.named_parameters() if w.dim() > 1 and float(w.grad.abs().sum()) == 0]
    assert frozen == [f"blocks.{net.config.blocks}.conv1.weight"]
    with pytest.raises(ValueError, match="can only grow"):
        grown(net, net.config.blocks, net.config.channels - 1)


def test_a_bfloat16_trunk_computes_close_to_float32_with_float32_heads_and_gradients(
    net: PolicyValueNet, boards: Boards
) -> None:
    low = PolicyValueNet(replace(TINY, precision="bfloat16"))
    low.load_state_dict(net.state_dict())
    legal = boards.legal()
    logits, values = low(boards.planes(), legal)
    assert logits.dtype == values.dtype == torch.float32
    with torch.no_grad():
        exact, exact_values = net(boards.planes(), legal)
    probs, exact_probs = torch.softmax(logits.detach(), 1), torch.softmax(exact, 1)
    assert bool((probs[~legal] == 0).all())
    assert 0 < float((probs - exact_probs).abs().max()) < 0.05
    assert float((values.detach() - exact_values).abs().max()) < 0.05
    # the argmax may differ only where float32's top two logits lie within bfloat16's error
    error = float((logits.detach() - exact).masked_fill(~legal, 0).abs().max())
    top_two = exact.topk(2, 1).values
    clear = top_two[:, 0] - top_two[:, 1] > 2 * error
    assert bool((logits.argmax(1) == exact.argmax(1))[clear].all()) and float(clear.float().mean()) > 0.5
    # mixed precision: the gradients reach every float32 weight
    (logits.logsumexp(1).sum() + values.sum()).backward()
    assert all(
        p.grad is not None and p.grad.dtype == torch.float32 and bool(p.grad.abs().sum() > 0)
        for p in low.parameters()
    )


def test_checkpoint_keeps_the_precision_and_old_ones_load_as_float32(
    tmp_path: Path, net: PolicyValueNet
) -> None:
    low = PolicyValueNet(replace(TINY, precision="bfloat16"))
    low.load_state_dict(net.state_dict())
    Checkpoint.of(low).save(tmp_path / "low.pt")
    back = Checkpoint.load(tmp_path / "low.pt")
    assert back.net_config.precision == "bfloat16"
    b = Boards.from_positions([Position.from_moves("4453")])
    assert torch.equal(back.build().evaluate(b)[0], low.evaluate(b)[0])
    # a checkpoint written before the field existed holds no precision: float32, as it trained
    raw = torch.load(tmp_path / "low.pt", weights_only=True)
    del raw["net_config"]["precision"]
    torch.save(raw, tmp_path / "old.pt")
    assert Checkpoint.load(tmp_path / "old.pt").net_config.precision == "float32"


def test_a_checkpoint_from_before_the_board_was_stored_once_loads_and_plays_alike(
    tmp_path: Path,
) -> None:
    """Checkpoints once stored the observation's size and the action count in their net config
    too; such a file builds the same net from its game."""
    game = ConnectFour(ODD)
    torch.manual_seed(SEED)
    net = PolicyValueNet(TINY, game)
    Checkpoint.of(net).save(tmp_path / "new.pt")
    raw = torch.load(tmp_path / "new.pt", weights_only=True)
    raw["net_config"] |= {"rows": ODD.rows, "cols": ODD.cols, "planes": 6, "actions": 0}
    torch.save(raw, tmp_path / "old.pt")
    old = Checkpoint.load(tmp_path / "old.pt")
    assert old.net_config == TINY and old.game == game
    b = Boards.from_positions([Position.from_moves("4453", ODD)])
    assert torch.equal(old.build().evaluate(b)[0], net.evaluate(b)[0])
    with pytest.raises(ValueError, match="built for Connect-4 on 5x6, not Connect Four"):
        Checkpoint.of(net, ConnectFour())


def test_a_table_checkpoint_round_trips_and_plays_its_table(tmp_path: Path) -> None:
    from c4core.games import load
    from c4core.learners.tabular import QTable, TablePlayer

    game = load("connect3-4x4")
    q = np.random.default_rng(0).normal(size=(23_930, 4)).astype(np.float32)
    ckpt = Checkpoint.of_table(QTable(game, q), generation=2, role="main")
    ckpt.save(tmp_path / "t.pt")
    back = Checkpoint.load(tmp_path / "t.pt")
    assert (back.kind, back.net_config, back.generation, back.optimizer) == ("table", None, 2, None)
    assert np.array_equal(back.build().q, q)
    player = back.player("gen2")
    assert isinstance(player, TablePlayer) and player.name == "gen2"
    b = Boards.from_positions([Position.from_moves("12", game.geometry)])
    row = back.build().index.rows(b.keys())[0]
    assert player.act(b).tolist() == [int(np.where(b.legal()[0].numpy(), q[row], -np.inf).argmax())]


def test_a_network_checkpoint_plays_as_a_net_player_and_unknown_kinds_are_refused(
    tmp_path: Path, net: PolicyValueNet
) -> None:
    ckpt = Checkpoint.of(net)
    assert ckpt.kind == "net" and isinstance(ckpt.player("x", greedy=False), NetPlayer)
    raw = {
        "format": 1,
        "model": {},
        "net_config": None,
        "geometry": asdict(STANDARD),
        "generation": 0,
        "optimizer": None,
        "train_config": {},
        "kind": "forest",
    }
    torch.save(raw, tmp_path / "odd.pt")
    with pytest.raises(ValueError, match="damaged c4core checkpoint.*unknown snapshot kind 'forest'"):
        Checkpoint.load(tmp_path / "odd.pt")


def test_a_snapshot_from_before_the_chain_planes_loads_with_zero_weights_on_them() -> None:
    """Dots and Boxes' observation grew from five planes to eleven: a snapshot of five, loaded
    directly or built from its checkpoint, plays as it did (`test_learners` trains on from one)."""
    game = DotsAndBoxes(Boxes(2, 2))
    torch.manual_seed(SEED)
    net = PolicyValueNet(TINY, game)
    old = {k: v.clone() for k, v in net.state_dict().items()}
    old["stem.weight"] = old["stem.weight"][:, :5].clone()
    with torch.no_grad():
        net.stem.weight[:, 5:] = 0  # the new planes are then read with zero weights
    fresh = PolicyValueNet(TINY, game)
    assert not fresh.load_snapshot(net.state_dict())  # a snapshot of eleven planes is no older one
    assert fresh.load_snapshot(old)
    boards = game.batch_of([game.state_from_moves("h0,0 h1,0 v0,0"), game.state_from_moves("h0,1 v1,2")])
    assert boards.observation()[:, 5:].sum() > 0  # the new planes are not blank here
    for mine, theirs in zip(fresh.evaluate(boards), net.evaluate(boards), strict=True):
        assert torch.equal(mine, theirs)
    checkpoint = replace(Checkpoint.of(net), model=old)
    assert torch.equal(checkpoint.build().evaluate(boards)[1], net.evaluate(boards)[1])


def test_a_reply_head_adds_logits_and_loads_from_snapshots_with_or_without_one(boards: Boards) -> None:
    """The reply head changes nothing the net plays with: a snapshot without one loads into a net
    with one (the head as it was made) and plays alike, and one with it loads into a net without
    it. The optimizer state saved with either fits the other: the shared parameters keep their
    moments, and the reply head's start afresh or are dropped."""
    torch.manual_seed(SEED)
    plain = PolicyValueNet(TINY)
    with_reply = PolicyValueNet(replace(TINY, reply_head=True))
    logits, head, reply = with_reply.heads_with_reply(boards.planes(), boards.legal())
    assert reply is not None and reply.shape == logits.shape == (len(boards), 7)
    assert torch.equal(with_reply.heads(boards.planes(), boards.legal())[1], head)
    assert plain.heads_with_reply(boards.planes(), boards.legal())[2] is None
    made = {k: v.clone() for k, v in with_reply.state_dict().items() if k.startswith("reply")}
    assert not with_reply.load_snapshot(plain.state_dict())
    assert all(torch.equal(with_reply.state_dict()[k], v) for k, v in made.items())
    for mine, theirs in zip(with_reply.evaluate(boards), plain.evaluate(boards), strict=True):
        assert torch.equal(mine, theirs)
    other = PolicyValueNet(TINY)
    assert not other.load_snapshot(with_reply.state_dict())
    assert torch.equal(other.evaluate(boards)[1], plain.evaluate(boards)[1])
    # optimizer states across the change, both ways
    saved = _adam_after_one_step(plain, STANDARD).state_dict()
    adam = torch.optim.Adam(with_reply.parameters())
    adam.load_state_dict(fitted_optimizer_state(saved, with_reply))
    moments = adam.state_dict()["state"]
    assert set(moments) == set(range(len(list(plain.parameters()))))
    assert torch.equal(moments[0]["exp_avg"], saved["state"][0]["exp_avg"])
    with_reply.heads_with_reply(boards.planes(), boards.legal())[2].sum().backward()
    adam.step()  # the reply head's first step, from no moments
    assert len(adam.state_dict()["state"]) == len(list(with_reply.parameters()))
    back = torch.optim.Adam(other.parameters())
    back.load_state_dict(fitted_optimizer_state(adam.state_dict(), other))
    assert set(back.state_dict()["state"]) == set(range(len(list(other.parameters()))))


def test_a_grown_net_keeps_its_reply_head(boards: Boards) -> None:
    torch.manual_seed(SEED)
    net = PolicyValueNet(replace(TINY, reply_head=True)).eval()
    big = grown(net, 2, 16, torch.Generator().manual_seed(3))
    small_reply = net.heads_with_reply(boards.planes(), boards.legal())[2]
    big_reply = big.heads_with_reply(boards.planes(), boards.legal())[2]
    assert torch.allclose(small_reply, big_reply, atol=1e-5)
