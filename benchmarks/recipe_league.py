"""`c4 league` with fields of its profile replaced, for recipe experiments that have no flag of
their own (a changed recipe is a new training key, so the league trains from its first
generation).

    python benchmarks/recipe_league.py --set alphazero.search.probe_from=12 --set generations=9 \\
        -- --profile cpu --game dots-and-boxes-3x3 --value-target margin --name d3p \\
        --tracking-uri sqlite:////tmp/d3p/m.db

Each ``--set PATH=VALUE`` names a field of `LeagueConfig` by its dotted path (as `training_key`
spells it) and a JSON value; everything after ``--`` goes to ``c4 league`` as it is, and its
``--profile`` (``cpu`` when not given) is the profile changed.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from c4core import cli
from c4core.config import PROFILES, overridden


def nested(path: str, value: Any) -> dict[str, Any]:
    """``{"a": {"b": value}}`` for the path ``a.b``: `overridden`'s form."""
    head, _, rest = path.partition(".")
    return {head: nested(rest, value) if rest else value}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    parser.add_argument("league", nargs=argparse.REMAINDER, help="-- then c4 league's arguments")
    args = parser.parse_args()
    league = args.league[1:] if args.league[:1] == ["--"] else args.league
    profile = league[league.index("--profile") + 1] if "--profile" in league else "cpu"
    for item in args.set:
        path, _, value = item.partition("=")
        PROFILES[profile] = overridden(PROFILES[profile], nested(path, json.loads(value)))
    print(f"profile {profile} with {', '.join(args.set)}", file=sys.stderr)
    return cli.main(["league", *league])


if __name__ == "__main__":
    sys.exit(main())
