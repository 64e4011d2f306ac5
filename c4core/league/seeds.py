"""Every random stream of a league: drawn from its seed, its training key, the generation and
what the stream is for, so a rerun draws the same and a changed recipe draws anew.
"""

from __future__ import annotations

import zlib

from c4core.config import LeagueConfig


def seed_for(config: LeagueConfig, generation: int, purpose: str) -> int:
    """The seed of `purpose`'s stream in `generation` (``"init"``, ``"train"``, ``"pfsp"``, ...)."""
    return zlib.crc32(f"{config.seed}:{config.training_hash()}:{generation}:{purpose}".encode())


def match_seed(config: LeagueConfig, a: str, b: str) -> int:
    """The seed of the match between members `a` and `b`, whichever is named first."""
    return seed_for(config, 0, "match:" + "|".join(sorted((a, b))))
