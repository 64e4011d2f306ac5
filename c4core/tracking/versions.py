"""The model registry's versions: one per snapshot of every role, registered once (looked up by
its league, generation, role and config-hash tags first), with its Elo tags and its model card.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from mlflow.entities import Metric
from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from c4core.config import (
    MAIN,
    TABULAR_LEARNERS,
    generation_of,
    role_of,
    snapshot_name,
)
from c4core.evaluation.elo import EloFit
from c4core.evaluation.match import MatchResult, head_to_head
from c4core.figures import elo, percent
from c4core.games import ConnectFour
from c4core.tracking.store import CHAMPION_ALIAS, MODEL_NAME, MLflowStore


def _version_role(version: ModelVersion) -> str:
    return version.tags.get("role", MAIN)  # versions from before roles are the main agent's


def find_version(store: MLflowStore, generation: int, role: str = MAIN) -> ModelVersion | None:
    """The registered version of `role`'s snapshot of `generation`, looked up by its
    league/generation/role/config tags."""
    flt = (
        f"name = '{store.tracking.model_name}' and tags.league = '{store.config.name}' "
        f"and tags.generation = '{generation}' and tags.config_hash = '{store.config_hash}'"
    )
    versions = [v for v in store.client.search_model_versions(flt) if _version_role(v) == role]
    versions = sorted(versions, key=lambda v: int(v.version))
    return versions[0] if versions else None


def member_versions(store: MLflowStore) -> dict[str, ModelVersion]:
    """Every registered version of this league and config, by member name (every role)."""
    flt = (
        f"name = '{store.tracking.model_name}' and tags.league = '{store.config.name}' "
        f"and tags.config_hash = '{store.config_hash}'"
    )
    out: dict[str, ModelVersion] = {}
    for v in sorted(store.client.search_model_versions(flt), key=lambda v: int(v.version)):
        out.setdefault(v.tags.get("member") or snapshot_name(int(v.tags["generation"])), v)
    return out


def league_versions(store: MLflowStore, role: str = MAIN) -> dict[int, ModelVersion]:
    """The registered versions of `role`'s snapshots in this league and config, by generation."""
    return {int(v.tags["generation"]): v for m, v in member_versions(store).items() if role_of(m) == role}


def current_champion(client: MlflowClient, model_name: str = MODEL_NAME) -> ModelVersion | None:
    try:
        return client.get_model_version_by_alias(model_name, CHAMPION_ALIAS)
    except MlflowException:
        return None


def _win_vs_tactical(results: Iterable[MatchResult], member: str) -> float | None:
    """The fraction of its games against ``tactical`` that `member` won; None if they never met."""
    wdl = head_to_head(results, member, "tactical")
    return wdl.win / wdl.games if wdl is not None else None


ROLE_CARD = {
    MAIN: "main agent (the league's learner; its snapshots can be champion)",
    "main-exploiter": "main exploiter (trains only against the current champion, to find its "
    "weaknesses; never champion)",
    "league-exploiter": "league exploiter (trains against the whole league, drawn by PFSP; never champion)",
}
"""What each role is, as the model card says it."""


def model_card(
    store: MLflowStore,
    generation: int,
    fit: EloFit | None,
    win_vs_tactical: float | None,
    role: str = MAIN,
) -> str:
    """The version's description: a short model card."""
    c = store.config
    member = snapshot_name(generation, role)
    training = (
        replace(c, generations=generation).describe_training()
        if role == MAIN
        else f"{c.ppo.iterations} PPO iterations x {c.ppo.games} games a generation"
    )
    from c4core.serving import example_moves

    tabular = c.learner(generation, role) in TABULAR_LEARNERS
    four = isinstance(c.board, ConnectFour)
    board = f"board {c.rows}x{c.cols}, connect {c.connect}" if four else f"board {c.rows}x{c.cols} boxes"
    # the first line is plain text: the registered model's versions table shows it raw
    lines = [
        f"{c.board.title} {'action-value table' if tabular else 'policy-value net'}, snapshot "
        f"{member} of league {c.name} (config {store.config_hash}, profile {c.profile}).",
        "",
        f"- Role: {ROLE_CARD[role]}.",
        f"- Table: one row of action values per position in play, by {c.learner(generation, role)}, "
        f"{board}; served without search (`simulations` 0)."
        if tabular
        else f"- Network: {c.net.blocks} residual blocks x {c.net.channels} channels "
        f"({c.net.precision} convolutions), {board}.",
        f"- Training: {training}.",
    ]
    if fit is not None and member in fit.ratings:
        lo, hi = fit.ci95[member]
        lines.append(f"- Elo: {elo(fit.ratings[member])} (95% CI {elo(lo)}..{elo(hi)}; random = 0).")
    if win_vs_tactical is not None:
        lines.append(f"- Wins vs the tactical bot: {percent(win_vs_tactical)} of {c.match_games} games.")
    n = c.board.num_actions
    lines += [
        "",
        f'Input: records with `moves` (solver notation, e.g. `"{example_moves(c.board)}"`) or `board` '
        f"({c.rows}x{c.cols}, rows top to bottom, 0 empty / 1 first player / 2 second player). "
        f"Output: `action` and `column` (0-{n - 1}), one number under both names, the column to play, "
        f"and `move`, its digit; `probs` ({n} floats, 0 on full columns), `value` (-1..1 for the side "
        "to move)."
        if four
        else f'Input: records with `moves` (lines such as `"{example_moves(c.board)}"`, `h<row>,<col>` '
        "and `v<row>,<col>` from 0, separated by spaces). Output: `action` (0-"
        f"{n - 1}), the line to draw, and `move`, the same line in that notation; `probs` ({n} floats, "
        "0 on drawn lines), `value` (-1..1 for the player to move).",
    ]
    return "\n".join(lines)


def model_description(title: str, champion: ModelVersion | None = None) -> str:
    """A registered model's description, for game `title`: the registry-wide `champion` first
    (its version, league, snapshot, Elo and a link to its page), then what the aliases mean. The
    title's holder rewrites it on every title change (`_take_title`)."""
    return f"{champion_line(champion)}\n\n{title} {_ABOUT}\n\n{_ALIASES}"


def champion_line(champion: ModelVersion | None) -> str:
    """The first line of the registered model's description: who holds the title."""
    if champion is None:
        return "**No champion yet**: the first league to finish a generation takes the title."
    t = champion.tags
    rating = f", Elo {t['elo']}" if t.get("elo") else ""  # as its league last rated it
    page = f"#/models/{champion.name}/versions/{champion.version}?workflowType=machine_learning"
    return (
        f"**Champion: version {champion.version}**, snapshot `{t.get('member', '?')}` of league "
        f"`{t.get('league', '?')}`{rating} ([its page]({page})). "
        f"Serve it as `models:/{champion.name}@champion`."
    )


_ABOUT = "self-play league snapshots, one version per snapshot of every league."


_ALIASES = (
    "- Alias `champion-<league>` (a `.` in the name becomes `_`): that league's best-rated "
    "main-agent snapshot, moved after every generation. Exploiters (tag `role`) are rated on the "
    "same ladder and never champion.\n"
    "- Alias `champion` (and stage Production): the registry-wide champion. A league's champion "
    "takes it when there is none yet, when the holder comes from the same league, or by beating "
    "the holder in a recorded gating match (400 games, colours alternated, random openings, a "
    "score of at least 0.55, as AlphaZero gated its new networks). The versions carry the gating "
    "result as tags (`gating_*`), and each league run's `champion_history.json` logs every "
    "challenge, won or lost."
)


def _ensure_registered_model(store: MLflowStore) -> None:
    client, name = store.client, store.tracking.model_name
    title = store.config.board.title
    try:
        model = client.get_registered_model(name)
    except MlflowException:
        try:
            client.create_registered_model(name, description=model_description(title))
            return
        except MlflowException:  # created concurrently
            model = client.get_registered_model(name)
    # a registry from before the description led with the champion; its first line is otherwise
    # the title holder's to write (`_take_title`, under the title lease)
    if not (model.description or "").endswith(model_description(title).split("\n\n", 1)[1]):
        description = model_description(title, current_champion(client, name))
        client.update_registered_model(name, description=description)


def register_snapshot(
    store: MLflowStore, generation: int, fit: EloFit | None = None, role: str = MAIN
) -> ModelVersion:
    """Register `role`'s snapshot of `generation` as a version of the model (reusing one that
    exists)."""
    from c4core.serving import save_pyfunc

    existing = find_version(store, generation, role)
    if existing is not None:
        return existing
    run = store.generation_run(generation, role)
    ckpt = store.snapshot(generation, role)
    member = snapshot_name(generation, role)
    if run is None or ckpt is None:
        raise ValueError(f"league {store.config.name!r} has no finished snapshot {member}")
    win = _win_vs_tactical(store.results(), member)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "model"
        save_pyfunc(model_dir, ckpt)
        # an upload to a fixed path: a retry after a crash overwrites, never duplicates
        store.client.log_artifacts(run.info.run_id, str(model_dir), "model")
    _ensure_registered_model(store)
    tags = store._key_tags() | {"generation": str(generation), "member": member, "role": role}
    if win is not None:
        tags["win_vs_tactical"] = f"{win:.4f}"
    if fit is not None and member in fit.ratings:
        tags |= _elo_tags(fit, member)
    return store.client.create_model_version(
        store.tracking.model_name,
        source=f"{run.info.artifact_uri}/model",
        run_id=run.info.run_id,
        tags=tags,
        description=model_card(store, generation, fit, win, role),
    )


def _elo_tags(fit: EloFit, member: str) -> dict[str, str]:
    lo, hi = fit.ci95[member]
    return {"elo": elo(fit.ratings[member]), "elo_ci95": f"[{elo(lo)}, {elo(hi)}]"}


def update_ratings(store: MLflowStore, fit: EloFit, generation: int) -> None:
    """Write the refit's Elo to every version's tags and card, and the ladder as metrics."""
    results = store.results()
    for member, v in member_versions(store).items():
        if member not in fit.ratings:
            continue
        for k, val in _elo_tags(fit, member).items():
            if v.tags.get(k) != val:
                store.client.set_model_version_tag(v.name, v.version, k, val)
        g, role = generation_of(member), role_of(member)
        assert g is not None and role is not None  # a version's member names a snapshot
        card = model_card(store, g, fit, _win_vs_tactical(results, member), role)
        if v.description != card:
            store.client.update_model_version(v.name, v.version, description=card)
    # the ladder, once per step: a rerun must not add a second point at the same step
    history = store.client.get_metric_history(store.league_run_id, "elo/" + snapshot_name(generation))
    if not any(m.step == generation for m in history):
        now = int(time.time() * 1000)
        # one decimal, as everywhere an Elo is shown (`c4core.figures.elo`)
        ladder = sorted(fit.ratings.items())
        metrics = [Metric(f"elo/{m}", float(elo(r)), now, generation) for m, r in ladder]
        store.client.log_batch(store.league_run_id, metrics=metrics)
