"""What the entry points share: the `c4` command (`c4core.cli`) and the DAG's steps (`c4core.steps`).

Both read the same environment and print the same closing lines, so each of those lives here
once: the tracking URI a league writes to, ``KEY=VALUE`` run tags, and the league's closing
summary. Nothing heavy is imported at module level: `tracking_uri`, `parse_tags` and `parse_fields` run before
any command decides whether it needs torch or mlflow.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from c4core.figures import elo, percent

if TYPE_CHECKING:
    from c4core.evaluation.elo import EloFit
    from c4core.evaluation.match import MatchResult
    from c4core.learners.net import Checkpoint
    from c4core.players import RegistryFetch
    from c4core.tracking.store import MLflowStore

NATIVE_BFLOAT16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
"""The CPU flags (as Linux's /proc/cpuinfo names them) of the instructions oneDNN's bfloat16
convolutions run on; without them torch emulates bfloat16."""


@cache  # the CPU does not change under a process, which builds configs in every step
def native_bfloat16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU computes bfloat16 natively (AVX-512 BF16 or AMX-BF16). Without them
    the bfloat16 trunk is emulated: a training step of the cpu net took 8x longer than in
    float32 on an AMD EPYC with AVX2 only (docs/BENCHMARKS.md). False where `cpuinfo` cannot be
    read (not Linux)."""
    try:
        with open(cpuinfo) as f:
            flags = {word for line in f if line.startswith("flags") for word in line.split()}
    except OSError:
        return False
    return bool(NATIVE_BFLOAT16_FLAGS & flags)


TRACKING_HELP = "MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else SQLite under the repo's mlruns/)"


def tracking_uri(explicit: str | None = None) -> str:
    """`explicit` when given, else $MLFLOW_TRACKING_URI, else the embedded SQLite store under the
    repo's ``mlruns/`` (the working directory's, when the package is not an editable install)."""
    if explicit:
        return explicit
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    here = Path(__file__).resolve().parents[1]
    root = here if (here / "pyproject.toml").is_file() else Path.cwd()
    return f"sqlite:///{root / 'mlruns' / 'mlflow.db'}"


def quiet_mlflow() -> None:
    """Keep MLflow from configuring logging (its INFO lines would interleave with ours, and in an
    Airflow worker it once broke Airflow's logging), from drawing download bars, and from its
    usage telemetry (which reports to an outside host and once crashed a pod run). Set before
    mlflow is imported; a value the user set wins."""
    os.environ.setdefault("MLFLOW_CONFIGURE_LOGGING", "false")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


def parse_tags(items: Sequence[str]) -> dict[str, str]:
    """``--tag KEY=VALUE`` arguments as a dict; a ValueError names a malformed one."""
    return dict(_pairs(items, "--tag", "KEY=VALUE"))


def parse_fields(items: Sequence[str]) -> dict[str, Any]:
    """``--set PATH=VALUE`` arguments as recipe fields by dotted path (`c4core.config.with_fields`):
    VALUE is read as JSON (``12``, ``0.75``, ``true``, ``["main"]``), and a VALUE that is no JSON
    stays a string (``gumbel``). A ValueError names a malformed one."""
    fields = {}
    for path, value in _pairs(items, "--set", "PATH=VALUE"):
        try:
            fields[path] = json.loads(value)
        except json.JSONDecodeError:
            fields[path] = value
    return fields


def _pairs(items: Sequence[str], option: str, form: str) -> list[tuple[str, str]]:
    """Each ``KEY=VALUE`` of `items`, given as `option`, split at its first ``=``."""
    out = []
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"{option} expects {form}, got {item!r}")
        out.append((key, value))
    return out


def registry_fetch(uri: str) -> RegistryFetch:
    """How `c4core.players.make_player` fetches a ``models:/`` spec: from the registry at
    tracking URI `uri`, importing mlflow only when a spec needs it."""

    def fetch(model_uri: str) -> tuple[Checkpoint, str]:
        from c4core.tracking.store import Tracking
        from c4core.tracking.uris import load_checkpoint

        ckpt, version = load_checkpoint(Tracking.for_uri(uri), model_uri)
        return ckpt, f"{version.name}/{version.version}"

    return fetch


def versus_line(results: Iterable[MatchResult], member: str, opponent: str = "tactical") -> str | None:
    """``champion vs tactical: 382/400 wins (95.5%), 4 draws, 14 losses`` from the league's
    records; None when the two have not played."""
    from c4core.evaluation.match import head_to_head

    wdl = head_to_head(results, member, opponent)
    if wdl is None or not wdl.games:
        return None
    return (
        f"champion vs {opponent}: {wdl.win}/{wdl.games} wins ({percent(wdl.win / wdl.games)}), "
        f"{wdl.draw} draws, {wdl.loss} losses"
    )


def registry_line(store: MLflowStore, member: str) -> str | None:
    """Where `member`'s registered version is, by the league's own alias, and whether it holds
    the registry-wide title (with its gating score, when it won one); None when `member` has
    no version."""
    from c4core.config import generation_of
    from c4core.tracking.champion import league_alias, same_version
    from c4core.tracking.store import CHAMPION_ALIAS
    from c4core.tracking.versions import current_champion, find_version

    generation = generation_of(member)
    version = find_version(store, generation) if generation is not None else None
    if version is None:
        return None
    name = version.name
    line = f"registry: models:/{name}@{league_alias(store.config.name)} = models:/{name}/{version.version}"
    holder = current_champion(store.client, store.tracking.model_name)
    score = version.tags.get("gating_score")
    if holder is not None and same_version(holder, version):
        line += f"; it holds the registry-wide title models:/{name}@{CHAMPION_ALIAS} (stage Production)"
        if version.tags.get("gating_won") == "true":
            line += f", won with a gating score of {score}"
    elif holder is not None:
        line += (
            f"; the registry-wide title stays with models:/{name}/{holder.version} "
            f"(league {holder.tags.get('league')!r})"
        )
        if version.tags.get("gating_opponent") == str(holder.version):
            line += f": gating score {score}, {store.config.gating_score} needed"
    return line


def iteration_line(member: str, iteration: int, total: int, metrics: Mapping[str, float]) -> str:
    """One training iteration of snapshot `member` as a progress line: the win rate against
    each opponent, then the losses, e.g. ``gen2 iteration 3/25: win vs random 0.97, vs self
    0.50; policy loss 0.412, value loss 0.301 (4.1 s)``."""
    wins = [
        f"vs {k.split('/')[1]} {v:.2f}"
        for k, v in metrics.items()
        if k.startswith("vs/") and k.endswith("/win")
    ]
    losses = [
        f"{k.split('/')[1]} loss {metrics[k]:.3f}" for k in ("losses/policy", "losses/value") if k in metrics
    ]
    seconds = metrics.get("charts/seconds", metrics.get("charts/selfplay_seconds"))
    line = f"{member} iteration {iteration + 1}/{total}: win " + ", ".join(wins)
    line += "; " + ", ".join(losses) if losses else ""
    return line + (f" ({seconds:.1f} s)" if seconds is not None else "")


def match_line(result: MatchResult) -> str:
    """A recorded match as a progress line, from A's side."""
    t = result.total
    return (
        f"match {result.a} vs {result.b}: {t.win} wins, {t.draw} draws, {t.loss} losses "
        f"(score {t.score:.3f}, {result.seconds:.1f} s)"
    )


def closing_summary(
    fit: EloFit, member: str, results: Iterable[MatchResult], where: str | None, baseline: str = "tactical"
) -> str:
    """The lines a league ends with: the ladder, the champion `member`, its score against the
    game's `baseline` bot (`LeagueConfig.bots`), and `where` (its registry version or checkpoint)
    when given."""
    from c4core.evaluation.elo import format_ladder

    lines = [format_ladder(fit), f"champion: {member} ({elo(fit.ratings[member])} Elo)"]
    lines += [line for line in (versus_line(results, member, baseline), where) if line is not None]
    return "\n".join(lines)
