"""The champion: each league's best-rated main-agent snapshot (its alias), and the registry-wide
title (the ``champion`` alias and stage Production), which another league's champion takes only
by a recorded gating match against its holder, one title move at a time under a lease.
"""

from __future__ import annotations

import json
import tempfile
import warnings
import zlib
from pathlib import Path
from typing import Any

from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from c4core.config import (
    MAIN,
    generation_of,
    role_of,
)
from c4core.evaluation.elo import EloFit
from c4core.evaluation.match import MatchResult
from c4core.learners.net import Checkpoint
from c4core.tracking.lease import Lease, process_owner
from c4core.tracking.store import (
    CHAMPION_ALIAS,
    CHAMPION_TABLE,
    MLflowStore,
    download_checkpoint,
    run_member,
    utc_now,
)
from c4core.tracking.versions import current_champion, find_version, model_description


def champion_history(store: MLflowStore) -> list[dict[str, Any]]:
    """The league's audit trail of champions, oldest first."""
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = store.client.download_artifacts(store.league_run_id, CHAMPION_TABLE, tmp)
            table = json.loads(Path(path).read_text())
    except (MlflowException, OSError, ValueError):
        return []
    return [dict(zip(table["columns"], row, strict=True)) for row in table.get("data", [])]


def league_alias(league: str) -> str:
    """The alias of league `league`'s own champion: ``champion-<league>``, a ``.`` in the name
    written ``_`` (an alias holds only letters, digits, ``_`` and ``-``)."""
    return f"{CHAMPION_ALIAS}-{league.replace('.', '_')}"


def league_champion(store: MLflowStore) -> ModelVersion | None:
    """The version that holds this league's alias."""
    try:
        return store.client.get_model_version_by_alias(
            store.tracking.model_name, league_alias(store.config.name)
        )
    except MlflowException:
        return None


def same_version(a: ModelVersion, b: ModelVersion) -> bool:
    """Whether two looked-up versions are one (MLflow returns the number as int or str)."""
    return (a.name, str(a.version)) == (b.name, str(b.version))


def _same_league(version: ModelVersion, store: MLflowStore) -> bool:
    return (version.tags.get("league"), version.tags.get("config_hash")) == (
        store.config.name,
        store.config_hash,
    )


def gating_match(store: MLflowStore, challenger: ModelVersion, holder: ModelVersion) -> MatchResult | None:
    """The gating match (played once, then read from its record) of `challenger`, this league's
    champion, against `holder`, another league's registry-wide champion: `gating_games` games
    from `challenger`'s side, greedy nets, colours alternated, random openings. None when the
    two play different boards, so no match can compare them."""
    from c4core.evaluation.match import play_match

    recorded = store.gating_record(str(challenger.version), str(holder.version))
    if recorded is not None:
        return recorded
    mine = store.snapshot(int(challenger.tags["generation"]))
    theirs = _download_version(store.client, holder)
    if mine is None or mine.game != theirs.game:
        return None
    c = store.config
    result = play_match(
        mine.player(f"{challenger.name}/{challenger.version}"),
        theirs.player(f"{holder.name}/{holder.version}"),
        c.gating_games,
        seed=zlib.crc32(f"gating:{challenger.version}:{holder.version}:{c.seed}".encode()),
        opening_plies=c.opening_plies,
        game=c.board,
    )
    store.record_gating(result, str(challenger.version), str(holder.version))
    return result


TITLE_TTL = 60.0
"""Seconds the holder of a title's lease may go without a heartbeat before another league may
take the lease over (its process died mid-promotion)."""


TITLE_WAIT = 900.0
"""Seconds a promotion waits for the title's lease while other leagues play their gating
matches, before it fails with `LeaseHeld`."""


def title_lease(model_name: str) -> str:
    """The lease key of a registered model's title (alias ``champion`` and stage Production)."""
    return f"title {model_name}"


def promote_champion(store: MLflowStore, member: str, fit: EloFit, generation: int) -> ModelVersion:
    """Make `member` this league's champion (alias `league_alias`), and the registry-wide
    champion (alias ``champion``, stage Production) when there is none, when the holder is of
    this league, or when `member` wins the gating match against the holder (`gating_match`,
    a score of at least `gating_score`). Every title change and every gating match gets a row
    in the league's champion history; the gating result goes into both versions' tags.
    The holder is read, challenged and replaced under the model's title lease (`title_lease`),
    so the title moves only from the holder that `member` beat. Returns `member`'s version. A
    no-op when nothing changed."""
    generation_held = generation_of(member)
    if generation_held is None or role_of(member) != MAIN:
        raise ValueError(f"only main-agent snapshots can be champion, not {member!r}")
    version = find_version(store, generation_held)
    if version is None:
        raise ValueError(f"{member} of league {store.config.name!r} is not registered")
    client, name = store.client, store.tracking.model_name
    held = league_champion(store)
    if held is not None and not _same_league(held, store):
        raise ValueError(
            f"alias {league_alias(store.config.name)!r} belongs to league {held.tags.get('league')!r}: "
            "league names that differ only in '.' and '_' share one alias; rename one"
        )
    if held is None or not same_version(held, version):
        client.set_registered_model_alias(name, league_alias(store.config.name), version.version)
    # the holder is read, challenged and replaced under the title's lease, so that no other
    # league moves the title in between: a challenger takes it only from the holder it beat
    owner = process_owner(f"league {store.config.name} gen{generation}")
    with Lease(client, title_lease(name), owner, TITLE_TTL).acquire(wait=TITLE_WAIT) as title:
        holder = current_champion(client, name)
        gating = None
        if holder is None or same_version(holder, version) or _same_league(holder, store):
            takes = True
        else:
            gating = gating_match(store, version, holder)
            takes = gating is not None and gating.total.score >= store.config.gating_score
            _tag_gating(client, version, holder, gating, takes)
        if holder is None or not same_version(holder, version):
            # the audit row first: a rerun after a crash finds it and only finishes the move
            _log_history(store, generation, member, version, fit, holder, takes, gating)
        if takes:
            title.check()
            latest = client.get_model_version(name, version.version)  # its Elo tags as refitted
            _take_title(client, name, latest, holder, store.config.board.title)
    client.set_tag(store.league_run_id, "champion", f"models:/{name}/{version.version} ({member})")
    return client.get_model_version(name, version.version)


def _download_version(client: MlflowClient, version: ModelVersion) -> Checkpoint:
    """The checkpoint of a registered version (any league's), from its source run."""
    run = client.get_run(version.run_id)
    return download_checkpoint(client, run, run_member(run))


def _tag_gating(
    client: MlflowClient,
    challenger: ModelVersion,
    holder: ModelVersion,
    gating: MatchResult | None,
    won: bool,
) -> None:
    score = f"{gating.total.score:.4f}" if gating is not None else "none: the two play different boards"
    tags = {
        challenger.version: {
            "gating_opponent": holder.version,
            "gating_score": score,
            "gating_won": str(won).lower(),
        },
        holder.version: {
            "gating_last_challenger": str(challenger.version),
            "gating_last_challenger_score": score,
        },
    }
    for v, kv in tags.items():
        for k, val in kv.items():
            client.set_model_version_tag(challenger.name, v, k, val)


def _log_history(
    store: MLflowStore,
    generation: int,
    member: str,
    version: ModelVersion,
    fit: EloFit,
    holder: ModelVersion | None,
    takes: bool,
    gating: MatchResult | None,
) -> None:
    """A row in the league's champion history: `version` took the title from `holder` (with or
    without a gating match), or challenged it and lost. The same row twice is written once."""
    row = {
        "time": utc_now(),
        "after_generation": generation,
        "member": member,
        "version": int(version.version),
        "elo": round(fit.ratings[member], 1),
        "previous_version": int(holder.version) if holder is not None else None,
        "title": takes,
        "gating_score": round(gating.total.score, 4) if gating is not None else None,
    }
    history = champion_history(store)
    same = ("version", "previous_version", "title")
    if history and all(history[-1].get(k) == row[k] for k in same):
        return
    # the whole table rewritten at one path (MLflow's table layout): old or new, never half
    rows = history + [row]
    table = {"columns": list(row), "data": [[r.get(c) for c in row] for r in rows]}
    store.client.log_dict(store.league_run_id, table, CHAMPION_TABLE)


def _take_title(
    client: MlflowClient, name: str, version: ModelVersion, holder: ModelVersion | None, title: str
) -> None:
    """Move the title to `version`: stage, alias, the since/until tags, and the registered
    model's description, whose first line names the holder. A rerun finishes a half-done move."""
    description = model_description(title, version)
    if (
        holder is not None
        and same_version(holder, version)
        and version.current_stage == "Production"
        and client.get_registered_model(name).description == description
    ):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # stages are deprecated, but users serve them
        client.transition_model_version_stage(name, version.version, "Production", True)
    client.set_registered_model_alias(name, CHAMPION_ALIAS, version.version)
    when = utc_now()
    if holder is not None and not same_version(holder, version):
        client.set_model_version_tag(name, holder.version, "champion_until", when)
    client.set_model_version_tag(name, version.version, "champion_since", when)
    client.update_registered_model(name, description=description)
