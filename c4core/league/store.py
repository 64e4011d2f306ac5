"""Where a league keeps its snapshots and match records: the `LeagueStore` protocol and a folder of
files (`LocalStore`); `c4core.tracking.store.MLflowStore` keeps them in MLflow.

Every write is whole or absent (`atomic_write`), and a store already holding a snapshot or a
match is never asked for it again, which is what makes a killed league resumable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from c4core.config import MAIN, snapshot_name
from c4core.evaluation.match import MatchResult
from c4core.learners.net import Checkpoint


class LeagueStore(Protocol):
    """Where a league keeps its snapshots and match records. A store is picklable, and its
    copy in another process sees the same league: the learners train in processes of their own."""

    def snapshot(self, generation: int, role: str = MAIN) -> Checkpoint | None:
        """`role`'s snapshot of `generation`, if it exists."""

    def save_snapshot(self, checkpoint: Checkpoint, metrics: list[dict[str, float]]) -> None:
        """Store a snapshot (of `checkpoint.role`) atomically, with its training metrics per
        iteration."""

    def log_iteration(
        self, generation: int, iteration: int, metrics: Mapping[str, float], role: str = MAIN
    ) -> None:
        """Record one training iteration's metrics as it finishes (a store may keep them only
        with the snapshot)."""

    def results(self) -> list[MatchResult]:
        """Every recorded match."""

    def record_match(self, result: MatchResult) -> None:
        """Record a match; recording the same pairing twice must not double-count."""


class LocalStore:
    """A league kept in a folder: ``gen<g>.pt`` snapshots and ``matches.jsonl``."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def snapshot(self, generation: int, role: str = MAIN) -> Checkpoint | None:
        path = self.root / f"{snapshot_name(generation, role)}.pt"
        return Checkpoint.load(path) if path.exists() else None

    def save_snapshot(self, checkpoint: Checkpoint, metrics: list[dict[str, float]]) -> None:
        name = snapshot_name(checkpoint.generation, checkpoint.role)
        # the metrics first: the checkpoint's presence is what marks the snapshot done
        atomic_write(self.root / f"{name}.metrics.json", json.dumps(metrics))
        checkpoint.save(self.root / f"{name}.pt")

    def log_iteration(
        self, generation: int, iteration: int, metrics: Mapping[str, float], role: str = MAIN
    ) -> None:
        """Nothing: a folder keeps the metrics with the snapshot (`save_snapshot`)."""

    def results(self) -> list[MatchResult]:
        path = self.root / "matches.jsonl"
        if not path.exists():
            return []
        return [MatchResult.from_record(json.loads(line)) for line in path.read_text().splitlines() if line]

    def record_match(self, result: MatchResult) -> None:
        existing = self.results()
        if any({r.a, r.b} == {result.a, result.b} for r in existing):
            return
        lines = [json.dumps(r.to_record()) for r in existing + [result]]
        atomic_write(self.root / "matches.jsonl", "\n".join(lines) + "\n")


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file, so a reader never sees half of it."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
