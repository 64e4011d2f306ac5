"""The policy-value network, the player that wraps it, and checkpoints.

A residual CNN in the AlphaZero mould: a 3x3 stem, `blocks` residual blocks of two 3x3
convolutions, then a policy head (one logit per action) and a value head (tanh, the expected
result for the player to move), and with `NetConfig.reply_head` an auxiliary head shaped as the
policy head that the AlphaZero-style learner fits to the next decision's policy target. Illegal
actions are masked before any softmax, so neither sampling nor argmax can pick one. The net
reads a game's observations (`Game.observation`) and is built for one game's observations and
actions (`PolicyValueNet.game`), so it plays any game of the interface.

Connect Four's input planes (`c4core.games.connect4.rules.NUM_PLANES`) hold the mover's stones, the
opponent's, the cells where a stone can land, each side's winning cells, and a constant plane that
marks the board edge for the zero-padded convolutions. Giving the threat maps as input is what lets
a small CPU-sized net learn tactics in minutes rather than hours.

Checkpoints are plain dicts of tensors and primitives written by `torch.save`, and read with
``weights_only=True``, so loading one never unpickles arbitrary objects. A checkpoint holds a
network or a tabular learner's table (`c4core.learners.tabular`), and `Checkpoint.player` plays either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from c4core.config import NetConfig
from c4core.games import BatchState, ConnectFour, Game, load
from c4core.games.connect4.rules import Geometry
from c4core.games.players import Player
from c4core.learners.tabular import QTable, TablePlayer

_NEG = -1e9
_REPLY = ("reply_conv.", "reply_fc.")
"""The reply head's parameters (`NetConfig.reply_head`)."""


class _Block(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.conv2(F.relu(self.conv1(x))))


class PolicyValueNet(nn.Module):
    """Residual policy-value CNN for one game, built for its observations and actions. No batch
    norm: PPO compares log-probs across updates, and batch statistics would make the same
    state's policy depend on its batch."""

    def __init__(self, config: NetConfig = NetConfig(), game: Game = ConnectFour()):
        super().__init__()
        self.config, self.game = config, game
        planes, height, width = game.observation_shape
        c, cells = config.channels, height * width
        self.stem = nn.Conv2d(planes, c, 3, padding=1)
        self.blocks = nn.Sequential(*[_Block(c) for _ in range(config.blocks)])
        self.policy_conv = nn.Conv2d(c, 2, 1)
        self.policy_fc = nn.Linear(2 * cells, game.num_actions)
        self.value_conv = nn.Conv2d(c, 1, 1)
        self.value_fc1 = nn.Linear(cells, config.value_hidden)
        self.value_fc2 = nn.Linear(config.value_hidden, max(config.value_bins, 1))
        if config.reply_head:
            self.reply_conv = nn.Conv2d(c, 2, 1)
            self.reply_fc = nn.Linear(2 * cells, game.num_actions)
        if config.value_bins:  # not in the state dict: the config fixes it
            support = torch.linspace(-1.0, 1.0, config.value_bins)
            self.register_buffer("value_support", support, persistent=False)

    @property
    def by_margin(self) -> bool:
        """Whether its value is the game's margin return, not the outcome (`NetConfig.value_target`)."""
        return self.config.value_target == "margin"

    def forward(self, planes: torch.Tensor, legal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked policy logits [n, actions] and values [n] in -1..1 for the player to move."""
        logits, head = self.heads(planes, legal)
        return logits, self.value_of(head)

    def heads(self, planes: torch.Tensor, legal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked policy logits [n, actions] and the value head's raw output: [n, 1] before the
        tanh, or [n, value_bins] logits of a categorical head (`value_of`, `value_loss`)."""
        logits, head, _ = self._heads(planes, legal, reply=False)
        return logits, head

    def heads_with_reply(
        self, planes: torch.Tensor, legal: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """`heads`, and the reply head's logits [n, actions], unmasked (the next position's legal
        moves are not this one's), or None for a net without one (`NetConfig.reply_head`)."""
        return self._heads(planes, legal, reply=self.config.reply_head)

    def _heads(
        self, planes: torch.Tensor, legal: torch.Tensor, reply: bool
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        if not self.config.threat_planes:
            planes = planes.clone()
            planes[:, 3:5] = 0
        low = self.config.precision == "bfloat16"
        if low:  # oneDNN's bfloat16 convolutions are fastest on channels-last input
            planes = planes.contiguous(memory_format=torch.channels_last)
        with torch.autocast(planes.device.type, dtype=torch.bfloat16, enabled=low):
            x = self.blocks(F.relu(self.stem(planes)))
            policy = F.relu(self.policy_conv(x)).flatten(1)
            value = F.relu(self.value_conv(x)).flatten(1)
            replies = F.relu(self.reply_conv(x)).flatten(1) if reply else None
        # the heads stay in float32: PPO's ratios and the search's values need the precision
        logits = self.policy_fc(policy.float()).masked_fill(~legal, _NEG)
        reply_logits = self.reply_fc(replies.float()) if replies is not None else None
        return logits, self.value_fc2(F.relu(self.value_fc1(value.float()))), reply_logits

    def value_of(self, head: torch.Tensor) -> torch.Tensor:
        """Values [n] in -1..1 from the value head's output (`heads`): its tanh, or the mean of
        a categorical head's values under its softmax."""
        if not self.config.value_bins:
            return torch.tanh(head).squeeze(1)
        return torch.softmax(head, 1) @ self.value_support

    def value_loss(self, head: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The value head's loss against targets [n] in -1..1: squared error of a scalar head,
        or a categorical head's cross-entropy to the targets' `two_hot` split."""
        if not self.config.value_bins:
            return F.mse_loss(self.value_of(head), target)
        return -(two_hot(target, self.value_support) * torch.log_softmax(head, 1)).sum(1).mean()

    def load_snapshot(self, model: Mapping[str, torch.Tensor]) -> bool:
        """Load a snapshot's weights (`Checkpoint.model`); True when the snapshot was made while
        its game's observation had fewer planes (Dots and Boxes before its chain planes). Games
        only ever append planes, so such a snapshot loads with zero stem weights on the new
        ones, and the net computes what it computed then. A snapshot without the net's reply
        head (`NetConfig.reply_head`) leaves the head as it was made, and one with a reply head
        the net lacks loads without it (`fitted_optimizer_state` fits its optimizer state)."""
        own = self.state_dict()
        theirs = {k: v for k, v in model.items() if not k.startswith(_REPLY) or k in own}
        mine = {k: v for k, v in own.items() if k.startswith(_REPLY) and k not in model}
        stem, planes = model.get("stem.weight"), self.stem.in_channels
        widened = stem is not None and stem.dim() == 4 and stem.shape[1] < planes
        if widened:
            pad = stem.new_zeros(stem.shape[0], planes - stem.shape[1], *stem.shape[2:])
            theirs["stem.weight"] = torch.cat([stem, pad], 1)
        self.load_state_dict({**theirs, **mine})
        return widened

    @torch.no_grad()
    def evaluate(self, boards: BatchState) -> tuple[torch.Tensor, torch.Tensor]:
        """Move probabilities [n, actions] (0 on illegal ones) and values [n] for a batch."""
        logits, value = self(boards.observation(), boards.legal())
        return torch.softmax(logits, 1), value


def fitted_optimizer_state(state: Mapping[str, Any], net: PolicyValueNet) -> dict[str, Any]:
    """An optimizer state saved with a snapshot (one parameter group, as the learners make),
    fitted to `net`'s parameters: the reply head's come last (`NetConfig.reply_head`), so a state
    saved without them gains them with no moments (Adam starts them afresh), and one saved with
    them, for a net without, drops theirs. The shared parameters keep their moments."""
    count = len(list(net.parameters()))
    (group,) = state["param_groups"]
    return {
        "state": {k: v for k, v in state["state"].items() if int(k) < count},
        "param_groups": [{**group, "params": list(range(count))}],
    }


def two_hot(target: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """Targets [n] as distributions [n, bins] over an evenly spaced `support`: each target's
    weight split between its two nearest values so that the distribution's mean is the target
    (MuZero's categorical value targets); a target on a value is one-hot there. Targets outside
    the support are clamped to it."""
    bins = len(support)
    position = (target.clamp(float(support[0]), float(support[-1])) - support[0]) / (support[1] - support[0])
    low = position.floor().clamp(max=bins - 2)
    upper = (position - low).clamp(0.0, 1.0)  # the weight of the value above; rounding stays in 0..1
    out = torch.zeros(len(target), bins, dtype=support.dtype, device=target.device)
    out.scatter_(1, low.long()[:, None], (1 - upper)[:, None].to(out.dtype))
    out.scatter_add_(1, low.long()[:, None] + 1, upper[:, None].to(out.dtype))
    return out


def grown(
    net: PolicyValueNet, blocks: int, channels: int, generator: torch.Generator | None = None
) -> PolicyValueNet:
    """A larger net that computes exactly what `net` computes, to train on from there
    (function-preserving growth, as in Chen et al. 2016, "Net2Net").

    New channels get small random input weights but zero weight into every old channel and
    into the heads, so they change nothing until training moves those weights; new residual
    blocks get a zero second convolution, so they start as the identity. Everything new still
    receives gradients, unlike an all-zero initialisation."""
    old = net.config
    if blocks < old.blocks or channels < old.channels:
        raise ValueError(f"can only grow: {old.blocks}x{old.channels} -> {blocks}x{channels}")
    big = PolicyValueNet(replace(old, blocks=blocks, channels=channels), net.game)
    c = old.channels
    src = net.state_dict()
    with torch.no_grad():
        for name, w in big.state_dict().items():
            if w.dim() == 4:  # fresh weights, scaled down so new channels start quiet
                w.copy_(0.3 * torch.randn(w.shape, generator=generator) * (2.0 / w[0].numel()) ** 0.5)
            else:
                w.zero_()
            if name not in src:  # a new block: conv1 random, conv2 zero
                if "conv2" in name:
                    w.zero_()
                continue
            o = src[name]
            if name.startswith(("stem", "blocks")):
                if w.dim() == 4:
                    w[:c] = 0  # old output channels read no new channel
                    w[:c, : o.shape[1]] = o
                else:
                    w[:c] = o
            elif name in ("policy_conv.weight", "value_conv.weight", "reply_conv.weight"):
                w.zero_()
                w[:, :c] = o
            else:
                w.copy_(o)
    return big.to(next(net.parameters()).device).eval()


class NetPlayer(Player):
    """A network as a player: argmax of the policy when greedy, else a sample at temperature."""

    def __init__(self, net: PolicyValueNet, name: str = "net", greedy: bool = True, temperature: float = 1.0):
        self.net = net.eval()
        self.name = name
        self.greedy = greedy
        self.temperature = temperature

    @torch.no_grad()
    def policy(self, boards: BatchState) -> torch.Tensor:
        """The greedy action as certain (the lowest of equal logits, as `argmax` picks), else the
        softmax at `temperature`."""
        device = next(self.net.parameters()).device
        logits, _ = self.net(boards.observation().to(device), boards.legal().to(device))
        if self.greedy:
            return torch.nn.functional.one_hot(logits.argmax(1), logits.shape[1]).float().cpu()
        return torch.softmax(logits / self.temperature, 1).cpu()

    @torch.no_grad()
    def act(self, boards: BatchState, generator: torch.Generator | None = None) -> torch.Tensor:
        device = next(self.net.parameters()).device
        legal = boards.legal()
        logits, _ = self.net(boards.observation().to(device), legal.to(device))
        if self.greedy:
            cols = logits.argmax(1)
        else:
            probs = torch.softmax(logits / self.temperature, 1)
            cols = torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(1)
        return cols.to(boards.device)


# ---- checkpoints --------------------------------------------------------------------------------
@dataclass
class Checkpoint:
    """What a snapshot needs to resume training or to play: a network's, or a table's
    (`c4core.learners.tabular`); `player` plays either."""

    model: dict[str, torch.Tensor]
    """The network's state dict, or a table's ``q`` (a row per position, a column per action)."""
    net_config: NetConfig | None
    """The network's shape; None for a table."""
    game: Game = ConnectFour()
    """The game it plays, with its parameters; files from before other games play Connect Four
    on the board they name."""
    generation: int = 0
    """League generation that produced it (0 for an untrained net)."""
    optimizer: dict[str, Any] | None = None
    """Optimizer state, to resume training."""
    train_config: dict[str, Any] = field(default_factory=dict)
    """The training config (a dataclass as a dict) it was trained with."""
    role: str = "main"
    """The league role that trained it (`c4core.config.ROLES`); files from before roles are
    the main agent's."""
    kind: str = "net"
    """``"net"`` or ``"table"``: what `model` holds. Files from before tables are networks'."""

    def build(self, device: str | torch.device = "cpu") -> PolicyValueNet | QTable:
        """The network (on `device`, in eval mode), or the table, ready to evaluate positions."""
        if self.kind == "table":
            return QTable(self.game, self.model["q"].numpy())
        assert self.net_config is not None
        net = PolicyValueNet(self.net_config, self.game)
        net.load_snapshot(self.model)
        return net.to(device).eval()

    @property
    def geometry(self) -> Geometry:
        """The Connect Four board it plays; `ValueError` for another game."""
        if not isinstance(self.game, ConnectFour):
            raise ValueError(f"this snapshot plays {self.game.title}, not Connect Four")
        return self.game.geometry

    def player(self, name: str, greedy: bool = True, device: str | torch.device = "cpu") -> Player:
        """The snapshot as a player: its network's (`NetPlayer`) or its table's (`TablePlayer`)."""
        model = self.build(device)
        if isinstance(model, QTable):
            return TablePlayer(model, name=name, greedy=greedy)
        return NetPlayer(model, name=name, greedy=greedy)

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        torch.save(
            {
                "format": 1,
                "model": self.model,
                "net_config": asdict(self.net_config) if self.net_config is not None else None,
                "game": {"name": self.game.name, "params": dict(self.game.params)},
                "generation": self.generation,
                "optimizer": self.optimizer,
                "train_config": self.train_config,
                "role": self.role,
                "kind": self.kind,
            },
            tmp,
        )
        tmp.replace(path)  # atomic: a reader never sees a half-written checkpoint

    @classmethod
    def load(cls, path: str | Path) -> Checkpoint:
        try:
            raw = torch.load(Path(path), map_location="cpu", weights_only=True)
        except FileNotFoundError:
            raise ValueError(f"no checkpoint at {path}") from None
        except Exception as e:  # torch raises many types for a corrupt or foreign file
            # torch's own text spans many lines and suggests weights_only=False: keep one line
            reason = "it holds objects other than tensors" if "weights_only" in str(e) else type(e).__name__
            raise ValueError(f"{path} is not a readable checkpoint ({reason})") from None
        if not isinstance(raw, dict) or raw.get("format") != 1:
            raise ValueError(f"{path} is not a c4core checkpoint")
        try:
            return cls(
                model=dict(raw["model"]),
                net_config=NetConfig.from_dict(raw["net_config"]) if raw["net_config"] is not None else None,
                game=_game(raw),
                generation=int(raw["generation"]),
                optimizer=raw["optimizer"],
                train_config=dict(raw["train_config"]),
                role=str(raw.get("role", "main")),
                kind=_kind(raw.get("kind", "net")),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{path} is a damaged c4core checkpoint ({type(e).__name__}: {e})") from None

    @classmethod
    def of(
        cls,
        net: PolicyValueNet,
        game: Game | None = None,
        generation: int = 0,
        optimizer: torch.optim.Optimizer | None = None,
        train_config: dict[str, Any] | None = None,
        role: str = "main",
    ) -> Checkpoint:
        """A network's snapshot; `game`, when given, must be the one the net is built for."""
        if game is not None and game != net.game:
            raise ValueError(f"the net is built for {net.game.title}, not {game.title}")
        return cls(
            model={k: v.detach().cpu().clone() for k, v in net.state_dict().items()},
            net_config=net.config,
            game=net.game,
            generation=generation,
            optimizer=optimizer.state_dict() if optimizer is not None else None,
            train_config=train_config or {},
            role=role,
        )

    @classmethod
    def of_table(
        cls,
        table: QTable,
        generation: int = 0,
        train_config: dict[str, Any] | None = None,
        role: str = "main",
    ) -> Checkpoint:
        return cls(
            model={"q": torch.from_numpy(table.q.copy())},
            net_config=None,
            game=table.game,
            generation=generation,
            train_config=train_config or {},
            role=role,
            kind="table",
        )


def _game(raw: dict[str, Any]) -> Game:
    if "game" not in raw:  # written before other games: Connect Four on its board
        return ConnectFour(Geometry(**raw["geometry"]))
    return load(str(raw["game"]["name"]), **{k: int(v) for k, v in dict(raw["game"]["params"]).items()})


def _kind(kind: Any) -> str:
    if kind not in ("net", "table"):
        raise ValueError(f"unknown snapshot kind {kind!r}")
    return str(kind)
