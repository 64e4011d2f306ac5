"""Batched Dots and Boxes: thousands of games stepped together as int64 line bitboards.

Same numbering and rules as `c4core.games.dots_and_boxes.rules` (see the diagram there). A
box is closed when all four bits of its mask are drawn; the boxes a move closes are those closed
after it and not before, and when there are any the mover keeps the move.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from c4core.games.dots_and_boxes.rules import NUM_PLANES, Boxes, DotsState


class DotsBoards:
    """A batch of Dots and Boxes games (`c4core.games.base.BatchState`), on any torch device."""

    def __init__(self, n: int, boxes: Boxes, device: str | torch.device = "cpu"):
        self.boxes = boxes
        self.device = torch.device(device)
        t = dict(dtype=torch.int64, device=self.device)
        self.lines = torch.zeros(n, **t)
        self.owned = torch.zeros(n, 2, **t)  # each player's boxes, as bitmasks
        self.player = torch.zeros(n, **t)
        self.done = torch.zeros(n, dtype=torch.bool, device=self.device)
        self._masks = torch.tensor(boxes.box_masks, **t)
        self._box_bits = 1 << torch.arange(boxes.boxes, **t)
        self._line_bits = 1 << torch.arange(boxes.lines, **t)
        height, width = boxes.grid
        self._line_at = torch.tensor([y * width + x for y, x in boxes.line_cells], **t)
        self._box_at = torch.tensor([y * width + x for y, x in boxes.box_cells], **t)
        self._sides_of = ((self._masks.unsqueeze(1) & self._line_bits) != 0).long()  # [boxes, lines]
        # each side of each box: (line, box, the box across it or -1 at the border)
        sides = [
            (a, x, y) for a, (p, q) in enumerate(boxes.line_boxes) for x, y in ((p, q), (q, p)) if x >= 0
        ]
        self._side_line, self._side_box, self._across = torch.tensor(sides, **t).T
        inner = [(a, p, q) for a, (p, q) in enumerate(boxes.line_boxes) if q >= 0]
        self._inner_line, self._inner_p, self._inner_q = torch.tensor(inner, **t).reshape(-1, 3).T

    def __len__(self) -> int:
        return self.lines.shape[0]

    @classmethod
    def from_states(
        cls, states: Sequence[DotsState], boxes: Boxes, device: str | torch.device = "cpu"
    ) -> DotsBoards:
        b = cls(len(states), boxes, device)
        if states:
            b.lines = torch.tensor([s.lines for s in states], dtype=torch.int64, device=b.device)
            b.owned = torch.tensor([list(s.owned) for s in states], dtype=torch.int64, device=b.device)
            b.player = torch.tensor([s.player for s in states], dtype=torch.int64, device=b.device)
            b.done = b.lines == boxes.all_lines
        return b

    def state(self, i: int) -> DotsState:
        return DotsState(
            self.boxes,
            int(self.lines[i]),
            (int(self.owned[i, 0]), int(self.owned[i, 1])),
            int(self.player[i]),
        )

    def select(self, idx: torch.Tensor) -> DotsBoards:
        b = DotsBoards.__new__(DotsBoards)
        b.__dict__.update(self.__dict__)
        for name in ("lines", "owned", "player", "done"):
            setattr(b, name, getattr(self, name)[idx].clone())
        return b

    def completed(self, lines: torch.Tensor) -> torch.Tensor:
        """[n] int64: the boxes closed by `lines`, as bitmasks."""
        closed = (lines.unsqueeze(1) & self._masks) == self._masks
        return (closed * self._box_bits).sum(1)

    def sides(self) -> torch.Tensor:
        """[n, boxes] int64: each box's drawn sides, 0 to 4."""
        return ((self.lines.unsqueeze(1) & self._line_bits) != 0).long() @ self._sides_of.T

    def captures(self) -> torch.Tensor:
        """[n, lines] int64: the boxes each legal line would complete now (0, 1 or 2; 0 on drawn
        lines and in finished games)."""
        three = (self.sides() == 3).long()
        return (three @ self._sides_of) * self.legal()

    def offers(self) -> torch.Tensor:
        """[n, lines] int64: the boxes each legal line would give a third side to (0, 1 or 2),
        each then a box the opponent can take; 0 on drawn lines and in finished games."""
        two = (self.sides() == 2).long()
        return (two @ self._sides_of) * self.legal()

    def gives_away(self) -> torch.Tensor:
        """[n, lines] int64: for each legal line that takes no box, the boxes the opponent then
        takes by taking every box it can, one after another (the chain or loop it opens: 0 for a
        safe line); 0 on drawn lines, lines that take a box, and in finished games."""
        out = torch.zeros(len(self), self.boxes.lines, dtype=torch.int64, device=self.device)
        quiet = self.legal() & (self.captures() == 0)
        before = self.completed(self.lines)
        for line in range(self.boxes.lines):
            rows = torch.nonzero(quiet[:, line]).squeeze(1)
            if not len(rows):
                continue
            after = self.select(rows)
            after.lines = after.lines | self._line_bits[line]
            for _ in range(self.boxes.boxes):  # each round takes every box with three sides
                take = after.captures() > 0
                if not bool(take.any()):
                    break
                after.lines = after.lines | (take * self._line_bits).sum(1)
            taken = after.completed(after.lines) & ~before[rows]
            out[rows, line] = ((taken.unsqueeze(1) & self._box_bits) != 0).sum(1)
        return out

    def legal(self) -> torch.Tensor:
        return ((self.lines.unsqueeze(1) & self._line_bits) == 0) & ~self.done.unsqueeze(1)

    def play(self, actions: torch.Tensor, where: torch.Tensor | None = None) -> None:
        active = ~self.done if where is None else ~self.done & where.to(self.device)
        actions = actions.to(self.device, torch.int64)
        ok = (actions >= 0) & (actions < self.boxes.lines)
        bit = self._line_bits[actions.clamp(0, self.boxes.lines - 1)]
        ok &= (self.lines & bit) == 0
        if bool((active & ~ok).any()):
            bad = int(torch.nonzero(active & ~ok)[0, 0])
            raise ValueError(f"illegal move: line {int(actions[bad])} in game {bad}")
        lines = torch.where(active, self.lines | bit, self.lines)
        new = self.completed(lines) & ~self.completed(self.lines)
        mover = self.player.unsqueeze(1) == torch.arange(2, device=self.device)
        self.owned = self.owned | torch.where(mover, new.unsqueeze(1), 0)
        self.player = torch.where(active & (new == 0), 1 - self.player, self.player)
        self.lines = lines
        self.done = self.lines == self.boxes.all_lines

    def to_move(self) -> torch.Tensor:
        return self.player.clone()

    def counts(self) -> torch.Tensor:
        """[n, 2] int64: the boxes each player owns."""
        return ((self.owned.unsqueeze(2) & self._box_bits) != 0).sum(2)

    def margin(self) -> torch.Tensor:
        """[n] int64: the first player's boxes minus the second's."""
        c = self.counts()
        return c[:, 0] - c[:, 1]

    def keys(self) -> torch.Tensor:
        m = self.margin()
        lead = torch.where(self.player == 0, m, -m)
        return self.lines | (lead + self.boxes.boxes) << self.boxes.lines

    def returns(self) -> torch.Tensor:
        first = torch.where(self.done, torch.sign(self.margin()), 0).float()
        return torch.stack((first, -first), 1)

    def margin_returns(self) -> torch.Tensor:
        """[n, 2] float32: each player's result as in `DotsState.margin_returns`."""
        first = torch.where(self.done, self.margin(), 0).float() / self.boxes.boxes
        return torch.stack((first, -first), 1)

    def chains(
        self, sides: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """[n, boxes] bool each: the boxes in a short chain (one or two boxes), in a long chain
        (three or more), and in a loop; and [n] int64, the number of long chains.

        A chain is a set of boxes with two or three sides drawn, joined through the undrawn
        sides they share (a box with three sides is an opened chain's end). It is a loop when
        no undrawn side of its boxes leads off it, to the border or to a box with fewer sides
        drawn. `sides`: `sides()`, when the caller has it."""
        n, count = len(self), self.boxes.boxes
        sides = self.sides() if sides is None else sides
        member = (sides == 2) | (sides == 3)
        undrawn = (self.lines.unsqueeze(1) & self._line_bits) == 0
        p, q = self._inner_p.expand(n, -1), self._inner_q.expand(n, -1)
        joined = undrawn[:, self._inner_line] & member.gather(1, p) & member.gather(1, q)
        # each chain is labelled by its lowest box, spread along joined sides (a chain has at
        # most `count` boxes, so `count` rounds always suffice)
        box = torch.arange(count, device=self.device).expand(n, -1)
        label = torch.where(member, box, count)
        for _ in range(count):
            low = torch.where(joined, torch.minimum(label.gather(1, p), label.gather(1, q)), count)
            spread = label.scatter_reduce(1, p, low, "amin").scatter_reduce(1, q, low, "amin")
            if torch.equal(spread, label):
                break
            label = spread
        across = torch.where(self._across >= 0, member[:, self._across.clamp(min=0)], False)
        leaves = undrawn[:, self._side_line] & ~across
        exits = torch.zeros_like(label).scatter_add(1, self._side_box.expand(n, -1), leaves.long())
        chain = label.clamp(max=count - 1)  # non-members add nothing, and read back masked
        size = torch.zeros_like(label).scatter_add(1, chain, member.long()).gather(1, chain)
        open_sides = torch.zeros_like(label).scatter_add(1, chain, exits * member).gather(1, chain)
        loop = member & (open_sides == 0)
        long = member & ~loop & (size >= 3)
        return member & ~loop & (size <= 2), long, loop, (long & (label == box)).sum(1)

    def safe(self, sides: torch.Tensor | None = None) -> torch.Tensor:
        """[n, lines] bool: the legal lines that give no box a third side and take none: those
        of no box with two or three sides drawn. `sides`: `sides()`, when the caller has it."""
        sides = self.sides() if sides is None else sides
        return self.legal() & ((((sides == 2) | (sides == 3)).long() @ self._sides_of) == 0)

    def observation(self) -> torch.Tensor:
        n, (height, width) = len(self), self.boxes.grid
        out = torch.zeros(n, NUM_PLANES, height * width, device=self.device)
        drawn = (self.lines.unsqueeze(1) & self._line_bits) != 0
        out[:, 0, self._line_at] = drawn.float()
        rows = torch.arange(n, device=self.device)
        mine, theirs = self.owned[rows, self.player], self.owned[rows, 1 - self.player]
        out[:, 1, self._box_at] = ((mine.unsqueeze(1) & self._box_bits) != 0).float()
        out[:, 2, self._box_at] = ((theirs.unsqueeze(1) & self._box_bits) != 0).float()
        sides = self.sides()
        out[:, 3, self._box_at] = (sides == 3).float()
        out[:, 4] = 1
        short, long, loop, long_chains = self.chains(sides)
        safe = self.safe(sides)
        out[:, 5, self._box_at] = short.float()
        out[:, 6, self._box_at] = long.float()
        out[:, 7, self._box_at] = loop.float()
        out[:, 8, self._line_at] = safe.float()
        out[:, 9] = (long_chains % 2).float().unsqueeze(1)
        out[:, 10] = (safe.sum(1) % 2).float().unsqueeze(1)
        return out.view(n, NUM_PLANES, height, width)
