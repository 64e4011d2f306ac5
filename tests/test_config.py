"""Configs and profiles (`c4core.config`): validation, round trips, the training hash, overrides,
and member names."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

import pytest

import c4core.config as config
from c4core.config import (
    KEY_SCHEMA,
    LEAGUE_VARIANTS,
    NEW,
    PROFILES,
    ROLES,
    LeagueConfig,
    NetConfig,
    PPOConfig,
    TabularConfig,
    generation_of,
    league_config,
    overridden,
    profile,
    role_of,
    snapshot_name,
    training_key,
    unkeyed,
    with_fields,
    with_training,
)
from c4core.games import exact_from, load

SMOKE = profile("smoke", name="t")
MIXED = profile(
    "smoke",
    name="mixed",
    alphazero_from=2,
    alphazero={"iterations": 1, "games": 8, "search": {"simulations": 4}, "batch_size": 64, "epochs": 1.0},
)


# ---- validation -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad",
    [
        dict(name=""),
        dict(name="has space"),
        dict(name="a/b"),
        dict(name="../up"),
        dict(generations=0),
        dict(match_games=3),
        dict(match_games=0),
        dict(connect=9),
        dict(roles=()),
        dict(roles=("main-exploiter",)),
        dict(roles=("main", "main")),
        dict(roles=("main", "coach")),
        dict(exploiter_base="random"),
        dict(exploiter_reset_score=0.5),
        dict(exploiter_reset_generations=0),
        dict(processes=-1),
    ],
)
def test_league_config_validation(bad: dict) -> None:
    with pytest.raises(ValueError):
        LeagueConfig(**bad)


def test_league_config_accepts_good_names() -> None:
    for name in ("a", "exp-1", "run_2.b", "X9"):
        assert LeagueConfig(name=name).name == name
    small = LeagueConfig(rows=5, cols=6)
    assert small.board.max_game_length == 30


def test_config_dict_round_trip() -> None:
    for cfg in (SMOKE, profile("cpu"), profile("gpu")):
        back = LeagueConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
        assert back == cfg
        assert back.training_hash() == cfg.training_hash()


def test_training_hash() -> None:
    h = SMOKE.training_hash()
    assert len(h) == 12
    for same in (dict(name="other"), dict(generations=9), dict(profile="custom"), dict(device="cuda")):
        assert replace(SMOKE, **same).training_hash() == h
    for changed in (
        dict(ppo=replace(SMOKE.ppo, learning_rate=5e-4)),
        dict(ppo=replace(SMOKE.ppo, iterations=3)),
        dict(ppo=replace(SMOKE.ppo, mirror=not SMOKE.ppo.mirror)),
        dict(net=replace(SMOKE.net, channels=16)),
        dict(seed=1),
        dict(match_games=40),
        dict(top_snapshots=2),
    ):
        assert replace(SMOKE, **changed).training_hash() != h


def test_profiles() -> None:
    assert profile("smoke").generations == 2 and profile("smoke").profile == "smoke"
    assert profile("cpu").device == "cpu" and profile("gpu").device == "cuda"
    tweaked = profile("smoke", generations=1, ppo={"iterations": 1}, net={"channels": 4})
    assert (tweaked.generations, tweaked.ppo.iterations, tweaked.net.channels) == (1, 1, 4)
    assert tweaked.ppo.games == profile("smoke").ppo.games  # other fields kept
    assert PROFILES["smoke"].ppo.iterations == 2  # the table itself is untouched
    with pytest.raises(ValueError, match="nope"):
        profile("nope")
    with pytest.raises(ValueError):
        profile("smoke", match_games=5)
    assert isinstance(profile("smoke").ppo, PPOConfig)


def test_profile_accepts_a_league_name_override() -> None:
    cfg = profile("smoke", name="t")
    assert cfg.name == "t" and cfg.profile == "smoke"
    assert replace(cfg, name="default") == profile("smoke")


def test_training_hash_ignores_alphazero_settings_of_ppo_only_leagues() -> None:
    h = SMOKE.training_hash()
    assert (
        replace(SMOKE, alphazero=overridden(SMOKE.alphazero, {"search": {"simulations": 7}})).training_hash()
        == h
    )
    assert MIXED.training_hash() != h
    assert (
        replace(MIXED, alphazero=overridden(MIXED.alphazero, {"search": {"simulations": 7}})).training_hash()
        != MIXED.training_hash()
    )
    back = LeagueConfig.from_dict(json.loads(json.dumps(MIXED.to_dict())))
    assert back == MIXED and back.training_hash() == MIXED.training_hash()


def test_training_hash_of_alphazero_leagues_without_the_solver_is_unchanged() -> None:
    """The solver settings only enter the hash once the solver is on, so AlphaZero leagues
    run before it existed resume as they were."""
    h = MIXED.training_hash()
    assert replace(MIXED, alphazero=replace(MIXED.alphazero, solve_nodes=7)).training_hash() == h
    solved = replace(MIXED, alphazero=replace(MIXED.alphazero, solve_from=16))
    assert solved.training_hash() != h
    assert (
        replace(solved, alphazero=replace(solved.alphazero, solve_nodes=7)).training_hash()
        != solved.training_hash()
    )
    assert "exact solver from ply 16" in solved.describe_training()
    assert "solver" not in MIXED.describe_training()
    probed = replace(solved, alphazero=overridden(solved.alphazero, {"search": {"probe_from": 16}}))
    assert probed.training_hash() != solved.training_hash()
    assert replace(
        solved, alphazero=overridden(solved.alphazero, {"search": {"probe_nodes": 7}})
    ).training_hash() == (solved.training_hash())
    assert "probing it at leaves from ply 16" in probed.describe_training()


def test_solver_positions_enter_the_hash_once_set_and_need_a_solver() -> None:
    """Positions labelled by the solver are a new recipe: off, the key is as before; on, it
    changes, and so does the solver's node budget with it, which then labels them."""
    h = MIXED.training_hash()
    labelled = replace(MIXED, alphazero=replace(MIXED.alphazero, solver_positions=512))
    assert (
        labelled.training_hash() != h and labelled.alphazero.uses_solver and not MIXED.alphazero.uses_solver
    )
    assert (
        replace(labelled, alphazero=replace(labelled.alphazero, solve_nodes=7)).training_hash()
        != labelled.training_hash()
    )
    assert "512 solver-labelled random positions an iteration" in labelled.describe_training()
    earlier = replace(labelled, alphazero=replace(labelled.alphazero, solver_positions_from=16))
    assert earlier.training_hash() not in (h, labelled.training_hash())
    assert "512 solver-labelled random positions an iteration from ply 16" in earlier.describe_training()
    with pytest.raises(ValueError, match="solver_positions_from must be 0"):
        replace(MIXED.alphazero, solver_positions_from=-1)
    with pytest.raises(ValueError, match="solver_positions_from must be a ply before"):
        replace(
            labelled, alphazero=replace(labelled.alphazero, solver_positions_from=MIXED.board.max_game_length)
        )
    big = league_config("cpu", "d", game="dots_and_boxes", rows=4, cols=5)
    with pytest.raises(ValueError, match="has no exact solver.*solver_positions must be 0"):
        replace(big, alphazero=replace(big.alphazero, solver_positions=512))


def test_the_solvers_policy_target_enters_the_hash_once_set_and_needs_rescoring() -> None:
    solved = replace(MIXED, alphazero=replace(MIXED.alphazero, solve_from=16))
    taught = replace(solved, alphazero=replace(solved.alphazero, solver_policy=True))
    assert taught.training_hash() != solved.training_hash()
    assert "its policy target the solver's best moves" in taught.describe_training()
    assert "best moves" not in solved.describe_training()
    with pytest.raises(ValueError, match="solver_policy .* set solve_from"):
        replace(MIXED.alphazero, solver_policy=True)


def test_random_images_enter_the_hash_once_set() -> None:
    drawn = replace(MIXED, alphazero=replace(MIXED.alphazero, random_image=True))
    assert drawn.training_hash() != MIXED.training_hash()


def test_with_training_overrides_both_learners() -> None:
    cfg = with_training(MIXED, iterations=3, games=10)
    assert (cfg.ppo.iterations, cfg.alphazero.iterations, cfg.ppo.games, cfg.alphazero.games) == (
        3,
        3,
        10,
        10,
    )
    assert with_training(MIXED) == MIXED
    assert "1 PPO generation" in MIXED.describe_training() and "1 AlphaZero" in MIXED.describe_training()
    assert "AlphaZero" not in SMOKE.describe_training()
    with pytest.raises(ValueError):
        replace(MIXED, alphazero_from=-1)


def test_nested_overrides_reach_the_search() -> None:
    assert MIXED.alphazero.search.simulations == 4
    assert MIXED.alphazero.search.root_noise  # the rest of the self-play search kept
    assert PROFILES["smoke"].alphazero.search.simulations == 64


def test_league_config_is_the_profile_with_the_settings_given() -> None:
    cfg = league_config("smoke", "x", generations=1, iterations=3, games=10, match_games=8, seed=4)
    assert cfg == with_training(
        profile("smoke", name="x", generations=1, match_games=8, seed=4), iterations=3, games=10
    )
    assert league_config("smoke") == profile("smoke")  # nothing given: the profile as it is
    with pytest.raises(ValueError, match="unknown profile"):
        league_config("nope")
    with pytest.raises(ValueError):
        league_config("smoke", "has space")


def test_from_dict_reads_configs_written_before_the_search_was_nested() -> None:
    old = MIXED.to_dict()
    search = old["alphazero"].pop("search")
    for key in ("simulations", "c_puct", "dirichlet_alpha", "noise_fraction", "probe_from", "probe_nodes"):
        old["alphazero"][key] = search[key]
    assert LeagueConfig.from_dict(old) == MIXED


def test_unused_settings_stay_out_of_the_key_and_used_ones_do_not() -> None:
    probing = replace(MIXED, alphazero=overridden(MIXED.alphazero, {"search": {"probe_from": 16}}))
    assert "alphazero.search.probe_nodes" in unkeyed(MIXED)
    assert "alphazero.search.probe_nodes" not in unkeyed(probing)
    assert "alphazero.solve_nodes" in unkeyed(MIXED)
    assert "alphazero" in unkeyed(SMOKE) and "alphazero" not in unkeyed(MIXED)
    assert {"name", "generations", "device"} <= unkeyed(SMOKE)


def _paths(config: Any, prefix: str = "") -> set[str]:
    out = set()
    for f in fields(config):
        out.add(prefix + f.name)
        value = getattr(config, f.name)
        if is_dataclass(value):
            out |= _paths(value, prefix + f.name + ".")
    return out


def _new_at_default(config: Any, prefix: str = "") -> set[str]:
    """The paths of the fields marked `NEW` that hold their default."""
    out = set()
    for f in fields(config):
        value = getattr(config, f.name)
        if f.metadata.get("key") == NEW["key"] and value == f.default:
            out.add(prefix + f.name)
        elif is_dataclass(value):
            out |= _new_at_default(value, prefix + f.name + ".")
    return out


def test_the_key_is_every_field_less_the_one_exclusion_set_plus_the_schema() -> None:
    """One rule: a league's key holds every field of its config (nested ones field by field)
    except those `unkeyed` names, each of which is a real field, and the fields added since the
    schema (`NEW`) while they hold their default; plus the schema's version."""
    for cfg in (
        SMOKE,
        MIXED,
        profile("cpu"),
        profile("gpu"),
        league_config("smoke", "t", game="connect3-4x4", learner="sarsa"),
    ):
        key, skip = training_key(cfg), unkeyed(cfg)
        assert skip <= _paths(cfg)
        assert key["schema"] == KEY_SCHEMA == 2

        def leaves(d: dict, prefix: str = "") -> set[str]:
            return {
                p
                for k, v in d.items()
                for p in (leaves(v, prefix + k + ".") if isinstance(v, dict) else {prefix + k})
            }

        kept = leaves({k: v for k, v in key.items() if k != "schema"})
        dropped = {p for p in _paths(cfg) if any(p == s or p.startswith(s + ".") for s in skip)}
        nested = {p for p in _paths(cfg) if any(q.startswith(p + ".") for q in _paths(cfg))}
        new = _new_at_default(cfg)
        assert kept == _paths(cfg) - dropped - nested - new
        assert "alphazero.evaluation_cache" in new


def test_a_new_field_set_joins_the_key() -> None:
    cached = replace(profile("cpu"), alphazero=replace(profile("cpu").alphazero, evaluation_cache=1000))
    assert training_key(cached)["alphazero"]["evaluation_cache"] == 1000
    assert "evaluation_cache" not in training_key(profile("cpu"))["alphazero"]
    assert cached.training_hash() != profile("cpu").training_hash()


@dataclass(frozen=True)
class _Later(LeagueConfig):
    """A league config as a later schema might have it: one field more, marked `NEW`."""

    added: int = field(default=3, metadata=NEW)
    """A setting added after the key's schema was set."""


def test_a_field_added_later_keys_a_league_only_once_it_leaves_its_default() -> None:
    assert training_key(_Later(name="t", profile="smoke")) == training_key(
        LeagueConfig(name="t", profile="smoke")
    )
    assert training_key(replace(_Later(), added=4))["added"] == 4
    assert (
        _Later().training_hash()
        == LeagueConfig().training_hash()
        != replace(_Later(), added=4).training_hash()
    )


@pytest.mark.parametrize("g", [1, 2, 10, 123])
def test_generation_of_inverts_snapshot_name(g: int) -> None:
    assert generation_of(snapshot_name(g)) == g


@pytest.mark.parametrize("name", ["random", "tactical", "gen", "gen-1", "gen1.5", "xgen3", "gen\u0663", ""])
def test_generation_of_other_names_is_none(name: str) -> None:
    assert generation_of(name) is None


def test_reading_a_config_imports_neither_torch_nor_numba() -> None:
    code = (
        "import sys, c4core.config as c; c.PROFILES['cpu-az'].training_hash(); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'numba', 'mlflow', 'scipy'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_profiles_keys_are_pinned() -> None:
    """The keys of the profiles' leagues, as schema 2 of the key rule (`KEY_SCHEMA`) made them:
    a change here re-keys every league of that profile, so it must be a deliberate one (the cpu
    profiles' last: Gumbel's root at 16 simulations). The cpu league is the first seven
    generations of the cpu-az league: one key."""
    expected = {
        "smoke": "0bf37107406e",
        "cpu": "133ee655fd2b",
        "cpu-az": "133ee655fd2b",
        "gpu": "e3886e1fa32e",
    }
    assert {name: PROFILES[name].training_hash() for name in expected} == expected
    cpu, cpu_az = PROFILES["cpu"], PROFILES["cpu-az"]
    assert cpu.generations < cpu_az.generations
    assert [cpu.learner(g) for g in range(1, 8)] == ["ppo"] * 6 + ["alphazero"]


def test_pfsp_enters_the_hash_only_when_chosen() -> None:
    h = SMOKE.training_hash()
    pfsp = replace(SMOKE, opponent_sampling="pfsp")
    assert pfsp.training_hash() != h
    assert replace(SMOKE, pfsp_prior=0.2).training_hash() == h  # unused by the top rule
    assert replace(pfsp, pfsp_prior=0.2).training_hash() != pfsp.training_hash()
    for bad in (dict(opponent_sampling="best"), dict(pfsp_prior=1.5)):
        with pytest.raises(ValueError):
            replace(SMOKE, **bad)


# ---- roles --------------------------------------------------------------------------------------
@pytest.mark.parametrize("g", [1, 2, 10, 123])
@pytest.mark.parametrize("role", ROLES)
def test_role_and_generation_invert_snapshot_name(g: int, role: str) -> None:
    name = snapshot_name(g, role)
    assert (generation_of(name), role_of(name)) == (g, role)
    assert (name == f"gen{g}") == (role == "main")  # the main agent keeps its names from before roles


@pytest.mark.parametrize("name", ["random", "gen3-xx", "gen-me", "gen3-me-le", "gen3me", "gen3-", "me3"])
def test_role_of_other_names_is_none(name: str) -> None:
    assert role_of(name) is None and generation_of(name) is None


def test_exploiters_join_from_the_second_generation_and_learn_by_ppo() -> None:
    az = replace(MIXED, roles=ROLES)
    assert az.roles_at(1) == ("main",) and az.roles_at(2) == ROLES
    assert az.learner(2) == "alphazero" and az.learner(2, "main-exploiter") == "ppo"
    assert az.iterations(2, "league-exploiter") == az.ppo.iterations


def test_roles_and_their_settings_enter_the_hash_only_when_used() -> None:
    h = SMOKE.training_hash()
    exploiting = replace(SMOKE, roles=("main", "main-exploiter"))
    assert exploiting.training_hash() != h
    for unused in (dict(exploiter_base="fresh"), dict(exploiter_reset_score=0.9), dict(processes=1)):
        assert replace(SMOKE, **unused).training_hash() == h, unused  # no exploiter to change
    assert replace(exploiting, exploiter_base="fresh").training_hash() != exploiting.training_hash()
    assert replace(exploiting, processes=1).training_hash() == exploiting.training_hash()
    assert LeagueConfig.from_dict(json.loads(json.dumps(exploiting.to_dict()))) == exploiting


def test_a_tabular_main_learner_is_checked_and_its_settings_enter_the_hash_only_when_used() -> None:
    h = SMOKE.training_hash()
    assert replace(SMOKE, tabular=TabularConfig(alpha=0.5)).training_hash() == h  # no table trains
    tab = league_config("smoke", "t", game="connect3-4x4", learner="sarsa")
    assert (tab.main_learner, tab.learner(1), tab.learner(2, "main"), tab.ranks(1)) == ("sarsa",) * 3 + (1,)
    assert tab.iterations(1) == tab.tabular.iterations and "sarsa generation(s)" in tab.describe_training()
    assert replace(tab, tabular=TabularConfig(alpha=0.5)).training_hash() != tab.training_hash()
    assert replace(tab, net=replace(tab.net, channels=4)).training_hash() == tab.training_hash()  # no net
    assert with_training(tab, iterations=3, games=50).tabular == replace(tab.tabular, iterations=3, games=50)
    assert LeagueConfig.from_dict(json.loads(json.dumps(tab.to_dict()))) == tab
    for bad, message in (
        (dict(learner="td"), "unknown main learner 'td'"),
        (dict(learner="q-learning"), "needs a game of at most 16 moves, not Connect Four"),
    ):
        with pytest.raises(ValueError, match=message):
            league_config("smoke", "t", **bad)
    mixed = replace(tab, roles=("main", "main-exploiter"))  # its exploiter is a network
    assert replace(mixed, net=replace(tab.net, channels=4)).training_hash() != mixed.training_hash()
    with pytest.raises(ValueError, match="learns by itself: no alphazero_from"):
        replace(tab, alphazero_from=2)
    with pytest.raises(ValueError, match="tabular alpha and gamma"):
        TabularConfig(gamma=0.0)


def test_the_league_share_enters_the_hash_only_when_used() -> None:
    h = MIXED.training_hash()
    shared = overridden(MIXED, {"alphazero": {"league_share": 0.25}})
    assert shared.training_hash() != h
    assert overridden(MIXED, {"alphazero": {"league_simulations": 8}}).training_hash() == h
    for bad in ({"league_share": 1.5}, {"league_simulations": -1}):
        with pytest.raises(ValueError):
            overridden(MIXED, {"alphazero": bad})


def test_ppo_ranks_enter_the_hash_only_when_more_than_one_and_stay_on_the_cpu() -> None:
    h = SMOKE.training_hash()
    assert overridden(SMOKE, {"ppo": {"ranks": 1}}).training_hash() == h
    ranked = league_config("smoke", "t", ranks=2)
    assert ranked.ppo.ranks == 2 and ranked.training_hash() != h
    assert replace(ranked, processes=1).training_hash() == ranked.training_hash()
    with pytest.raises(ValueError, match="GPU"):
        replace(ranked, device="cuda")
    with pytest.raises(ValueError, match="at least 2 of the 32 games"):
        league_config("smoke", "t", ranks=17)


def test_net_precision_enters_the_hash_only_when_bfloat16_and_is_checked() -> None:
    h = SMOKE.training_hash()
    assert overridden(SMOKE, {"net": {"precision": "float32"}}).training_hash() == h
    assert overridden(SMOKE, {"net": {"precision": "bfloat16"}}).training_hash() != h
    with pytest.raises(ValueError, match="unknown net precision 'float16': choose from float32, bfloat16"):
        overridden(SMOKE, {"net": {"precision": "float16"}})
    low = league_config("smoke", "t", precision="bfloat16")
    assert low.net.precision == "bfloat16" and low.training_hash() != h
    assert league_config("cpu", "t", precision="float32").net.precision == "float32"
    with pytest.raises(ValueError, match="unknown net precision 'half': choose from auto, float32, bfloat16"):
        league_config("cpu", "t", precision="half")


@pytest.mark.parametrize("native", [True, False])
def test_auto_precision_keeps_a_bfloat16_profile_only_where_the_cpu_computes_it(native: bool) -> None:
    def league_config(*args: Any, **settings: Any) -> LeagueConfig:  # on a host that has it, or not
        return config.league_config(*args, native_bfloat16=native, **settings)

    for precision in (None, "auto"):
        cpu = league_config("cpu", "t", precision=precision)
        assert cpu.net.precision == ("bfloat16" if native else "float32")
        assert (
            cpu.training_hash()
            == (
                PROFILES["cpu"]
                if native
                else replace(PROFILES["cpu"], net=replace(PROFILES["cpu"].net, precision="float32"))
            ).training_hash()
        )
        assert league_config("cpu-az", "t", precision=precision).net.precision == cpu.net.precision
        assert league_config("gpu", "t", precision=precision).net.precision == "float32"
        assert league_config("smoke", "t", precision=precision).net.precision == "float32"
    # asked for by name, a precision is what the user gets, emulated or not
    assert league_config("cpu", "t", precision="bfloat16").net.precision == "bfloat16"
    assert league_config("cpu", "t", precision="float32").net.precision == "float32"


# ---- the game -----------------------------------------------------------------------------------
def test_a_league_asked_for_a_variant_plays_it_with_a_net_built_for_its_board() -> None:
    by_variant = league_config("smoke", "c3", game="connect3-4x4")
    by_board = league_config("smoke", "c3", game="connect4", rows=4, cols=4, connect=3)
    assert by_variant == by_board
    assert (by_variant.game, by_variant.rows, by_variant.cols, by_variant.connect) == ("connect4", 4, 4, 3)
    assert by_variant.net == PROFILES["smoke"].net  # the board is the league's alone, stored once
    assert by_variant.board.observation_shape == (6, 4, 4) and by_variant.board.num_actions == 4
    assert by_variant.variant == "connect3-4x4" and by_variant.board.title == "Connect-3 on 4x4"
    assert by_variant.training_hash() != league_config("smoke", "c3").training_hash()
    assert league_config("smoke", "x", rows=5).variant == "connect4-5x7"  # the rest stays the game's
    assert LEAGUE_VARIANTS == ("connect4", "connect3-4x4", "dots-and-boxes-3x3", "dots-and-boxes-4x4")


def test_a_dots_and_boxes_league_has_its_own_bots_net_and_the_solver_its_board_has() -> None:
    """Another game's league: its bots, a net for its observations and lines, its board fields
    alone (not `connect`), and the profile's solver settings only where its board has an exact
    solver (3x3 and 4x4 boxes, not 4x5), no earlier than the ply that solver reaches cheaply."""
    dots = league_config("cpu", "d", game="dots-and-boxes-3x3")
    assert dots.bots == ("random", "greedy") and SMOKE.bots == ("random", "tactical")
    assert dots.net == PROFILES["cpu"].net and (dots.board.observation_shape, dots.board.num_actions) == (
        (11, 7, 7),
        24,
    )
    assert dots.board == load("dots_and_boxes", rows=3, cols=3) and dots.variant == "dots-and-boxes-3x3"
    cpu = PROFILES["cpu"].alphazero
    assert cpu.solve_from > 0 and (dots.alphazero.solve_from, dots.alphazero.search.probe_from) == (
        cpu.solve_from,
        cpu.search.probe_from,
    )
    four = league_config("cpu", "d", game="dots-and-boxes-4x4").alphazero
    assert four.solve_from == exact_from(load("dots-and-boxes-4x4")) > cpu.solve_from
    assert four.search.probe_from == cpu.search.probe_from == 0  # off stays off
    probed = league_config("cpu", "d", game="dots-and-boxes-4x4", recipe={"alphazero.search.probe_from": 3})
    assert probed.alphazero.search.probe_from == 3  # a recipe, applied last, may ask for an earlier ply
    big = league_config("cpu", "d", game="dots_and_boxes", rows=4, cols=5)
    assert (big.alphazero.solve_from, big.alphazero.search.probe_from) == (0, 0)
    assert (
        not dots.enumerable and league_config("smoke", "d", game="dots_and_boxes", rows=2, cols=2).enumerable
    )
    with pytest.raises(ValueError, match="has no exact solver"):
        replace(big, alphazero=replace(big.alphazero, solve_from=10))
    with pytest.raises(ValueError, match="other games keep them"):
        replace(dots, net=replace(dots.net, threat_planes=False))


def test_a_margin_value_target_needs_a_game_with_margins_and_changes_the_key_alone() -> None:
    """The default (the outcome) leaves every key as it was; the margin is a new recipe, for a
    game that grades its results, and reads back from its dict."""
    dots = league_config("cpu", "d", game="dots-and-boxes-3x3")
    assert dots.net.value_target == "outcome" and "value_target" not in training_key(dots)["net"]
    margin = league_config("cpu", "d", game="dots-and-boxes-3x3", value_target="margin")
    assert margin.net.value_target == "margin" and margin.training_hash() != dots.training_hash()
    assert margin == replace(dots, net=replace(dots.net, value_target="margin"))
    assert LeagueConfig.from_dict(margin.to_dict()) == margin
    with pytest.raises(ValueError, match="Connect Four has no margin to learn"):
        league_config("cpu", "c", value_target="margin")
    with pytest.raises(ValueError, match="unknown value target 'score': choose from outcome, margin"):
        league_config("cpu", "d", game="dots-and-boxes-3x3", value_target="score")


def test_naming_the_standard_game_is_the_default_league_and_reads_configs_from_before_the_field() -> None:
    """Naming Connect Four is the league of no game named, and a config written before leagues
    had a game reads back as Connect Four's."""
    assert league_config("smoke", "x", game="connect4") == league_config("smoke", "x")
    assert training_key(SMOKE)["game"] == "connect4" and SMOKE.variant == "connect4"
    assert LeagueConfig.from_dict({k: v for k, v in SMOKE.to_dict().items() if k != "game"}) == SMOKE


def test_a_config_written_before_the_board_was_stored_once_reads_back() -> None:
    """Configs (and checkpoints) from before held the net's own observation size and action
    count; the league's game gives them now."""
    old = SMOKE.to_dict()
    old["net"] |= {"rows": 6, "cols": 7, "planes": 6, "actions": 0}
    assert LeagueConfig.from_dict(old) == SMOKE
    assert NetConfig.from_dict({"blocks": 1, "rows": 4, "cols": 4, "planes": 6, "actions": 0}) == NetConfig(
        blocks=1
    )


@pytest.mark.parametrize(
    "settings,message",
    [
        ({"game": "go"}, "unknown game 'go'"),
        ({"game": "tic-tac-toe"}, "unknown game 'tic-tac-toe'"),
        ({"cols": 10}, "2-9 columns"),
        ({"game": "connect3-4x4", "connect": 5}, "cannot fit on a 4x4 board"),
    ],
)
def test_a_game_the_league_cannot_play_is_refused_by_name(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        league_config("smoke", "x", **settings)


def test_a_tabular_learner_replaces_the_profiles_alphazero_generations() -> None:
    """`--learner q-learning` on the `cpu` profile, whose later generations are AlphaZero's: the
    table trains them all."""
    table = league_config("cpu", "t", game="connect3-4x4", learner="q-learning")
    assert table.alphazero_from == 0 and table.learner(PROFILES["cpu"].alphazero_from) == "q-learning"
    assert league_config("cpu", "t", learner="ppo").alphazero_from == PROFILES["cpu"].alphazero_from


# ---- recipe fields -------------------------------------------------------------------------------
def test_recipe_fields_replace_fields_at_any_depth_by_their_dotted_paths() -> None:
    cfg = with_fields(
        PROFILES["cpu"],
        {
            "alphazero.search.probe_from": 12,
            "alphazero.q_weight": 1,
            "ppo.target_kl": None,
            "roles": ["main"],
        },
    )
    assert cfg == overridden(
        PROFILES["cpu"],
        {"alphazero": {"search": {"probe_from": 12}, "q_weight": 1.0}, "ppo": {"target_kl": None}},
    )
    assert type(cfg.alphazero.q_weight) is float and cfg.roles == ("main",)  # the fields' own types
    assert cfg.alphazero.search.simulations == PROFILES["cpu"].alphazero.search.simulations  # the rest kept
    assert with_fields(PROFILES["cpu"], {}) == PROFILES["cpu"]


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"alphazero.nope": 1}, "unknown recipe field 'alphazero.nope': AlphaZeroConfig has iterations, "),
        ({"generations.x": 1}, "'generations' holds no fields"),
        ({"alphazero": 1}, "'alphazero' is a group of fields"),
        ({"name": "other"}, "'name' is set by its own option"),
        ({"game": "dots_and_boxes"}, "'game' is set by its own option"),
        ({"alphazero.solve_from": "12"}, "alphazero.solve_from takes a whole number, got '12'"),
        ({"alphazero.solve_from": 1.5}, "takes a whole number"),
        ({"alphazero.mirror": 1}, "alphazero.mirror takes true or false, got 1"),
        ({"alphazero.q_weight": True}, "takes a number"),
        ({"alphazero.q_weight": None}, "takes a number"),
        ({"roles": ["main", 3]}, "roles takes a list, each item a string"),
        ({"alphazero.q_weight": 2.0}, "q_weight must be within 0..1"),  # the config's own check
        ({"net.precision": "fp8"}, "unknown net precision 'fp8'"),
    ],
)
def test_a_bad_recipe_field_is_refused_by_name(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        league_config("cpu", "x", recipe=fields)


def test_a_recipe_applies_last_and_keys_a_league_of_its_own() -> None:
    exact = {"alphazero.solve_from": 1, "alphazero.search.probe_from": 12}
    cfg = league_config("cpu", "x", game="dots-and-boxes-3x3", value_target="margin", games=64, recipe=exact)
    plain = league_config("cpu", "x", game="dots-and-boxes-3x3", value_target="margin", games=64)
    assert cfg == with_fields(plain, exact)
    assert cfg.training_hash() != plain.training_hash()
    # over the options: the recipe's value wins
    assert league_config("cpu", "x", games=64, recipe={"alphazero.games": 32}).alphazero.games == 32
    # a board without an exact solver refuses the solver's fields, set or not by a recipe
    big = {"game": "dots_and_boxes", "rows": 4, "cols": 5}
    assert league_config("cpu", "x", **big).alphazero.solve_from == 0
    with pytest.raises(ValueError, match="Dots and Boxes on 4x5 boxes has no exact solver"):
        league_config("cpu", "x", **big, recipe={"alphazero.search.probe_from": 12})
