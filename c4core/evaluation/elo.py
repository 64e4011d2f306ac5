"""Joint Bradley-Terry Elo ratings for the self-play league, fitted by maximum likelihood.

Model
-----
The Bradley-Terry model (Bradley & Terry, *Biometrika* 39, 1952; first stated by
Zermelo, *Math. Z.* 29, 1929) gives the probability that player ``a`` beats ``b`` as::

    P(a beats b) = 1 / (1 + 10 ** (-(r_a - r_b) / 400))

which is the usual Elo logistic curve on a 400-point scale. A draw counts as half a
win and half a loss. All ratings are estimated *jointly* from every result by
maximising the likelihood, rather than by sequential Elo updates, so the answer does
not depend on the order in which games were played.

The negative log-likelihood is convex in the ratings (Hunter, "MM algorithms for
generalized Bradley-Terry models", *Ann. Statist.* 32, 2004, who also states the
existence condition used below). It is minimised with a matrix-free trust-region Newton
method (``scipy.optimize.minimize(method="trust-ncg")``) using the analytic gradient and
Hessian-vector products, then polished with plain Newton steps until the Newton
decrement is negligible. Newton steps reach machine precision in a handful of
iterations where first-order methods (MM, gradient ascent, L-BFGS) crawl along the flat
directions created by lopsided pairings.

Regularisation
--------------
A perfect record has no finite maximum-likelihood rating. ``virtual_draws`` (default 1)
draws are therefore added to every *pairing*, i.e. every unordered pair of players that
played at least one real game against each other, once per pair however many records
describe it. This pulls ratings of unbeaten players to a large but finite value and
leaves well-sampled pairings essentially unchanged.

Identification
--------------
Ratings are only defined up to a common shift. The ``anchor`` player (default
``"random"``) is pinned at exactly 0. If the anchor did not play, the mean of all
ratings is pinned at 0 instead. Ratings of players in different connected components
of the pairing graph are not comparable, so a disconnected graph is an error.

Uncertainty
-----------
95% intervals are ``r +/- 1.96 * sd`` with ``sd`` from the inverse observed Fisher
information (the Hessian of the regularised negative log-likelihood at the optimum).
With an anchor, the anchor's row and column are removed before inversion and the
anchor's interval is ``(0, 0)``. With the mean pinned, the covariance is that of the
mean-centred ratings, ``P C P`` with ``P = I - 11'/n`` and ``C`` the covariance for
an arbitrary pinned player; this equals the Moore-Penrose pseudo-inverse of the full
(singular) Hessian, so no player's interval is artificially zero.

Cost
----
Aggregation is linear in the number of records and each optimiser step linear in the
number of pairings. The intervals need one dense O(players^3) factorisation, done in
plain numpy (about 5 ms for 200 players, 0.5 s for 1000).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.optimize
import scipy.sparse
import scipy.sparse.csgraph
import scipy.sparse.linalg
from scipy.special import expit

from c4core.figures import elo

__all__ = ["ELO_SCALE", "EloFit", "expected_score", "fit_elo", "format_ladder"]

ELO_SCALE = 400.0

# Converts natural-log odds (the optimiser's units, better conditioned) to Elo points.
_LOGIT_TO_ELO = ELO_SCALE / math.log(10.0)
_Z95 = 1.96
_COUNT_KEYS = ("win", "draw", "loss")
_REQUIRED_KEYS = ("a", "b", *_COUNT_KEYS)
# Trust-region stopping tolerance (gradient, in games); the Newton polish below takes the
# ratings the rest of the way, so this only has to get close to the optimum.
_GTOL = 1e-6
_MAX_ITER = 500
# Newton polish stops when the squared Newton decrement is below this, i.e. the ratings
# are within ~1e-8 standard errors of the exact optimum.
_DECREMENT_TOL = 1e-16
_MAX_POLISH = 20
# Relative residual for the conjugate-gradient Newton solves of the polish.
_CG_RTOL = 1e-12
_MAX_NAMES_IN_ERROR = 6


@dataclass(frozen=True)
class EloFit:
    """Result of :func:`fit_elo`.

    All dictionaries are keyed by player name and contain exactly the players that
    played at least one real game.
    """

    ratings: dict[str, float]
    """Maximum-likelihood Elo rating per player."""
    ci95: dict[str, tuple[float, float]]
    """Approximate 95% confidence interval ``(lo, hi)`` per player."""
    anchor: str | None
    """Player pinned at exactly 0, or ``None`` when the mean rating is pinned at 0."""
    games: dict[str, int]
    """Number of real (non-virtual) games played per player."""

    def ladder(self) -> list[tuple[str, float, float, float]]:
        """Return ``(name, rating, lo, hi)`` rows, best rating first, ties by name."""
        rows = [(name, r, *self.ci95[name]) for name, r in self.ratings.items()]
        rows.sort(key=lambda row: (-row[1], row[0]))
        return rows

    def to_json(self) -> dict:
        """Return a JSON-serialisable dict ``{"ratings": {...}, "ci95": {name: [lo, hi]}}``.

        Values are plain Python floats at full precision; keys are sorted by name so the
        serialised form is deterministic.
        """
        names = sorted(self.ratings)
        return {
            "ratings": {name: float(self.ratings[name]) for name in names},
            "ci95": {name: [float(self.ci95[name][0]), float(self.ci95[name][1])] for name in names},
        }


def expected_score(r_a: float, r_b: float) -> float:
    """Return the expected score of a player rated ``r_a`` against one rated ``r_b``.

    ``1 / (1 + 10 ** (-(r_a - r_b) / 400))``, evaluated so that huge rating gaps give
    0.0 or 1.0 instead of overflowing.
    """
    d = (float(r_a) - float(r_b)) / ELO_SCALE
    if d >= 0.0:
        return 1.0 / (1.0 + 10.0 ** (-d))
    t = 10.0**d
    return t / (1.0 + t)


@dataclass(frozen=True)
class _Pairings:
    """Canonical aggregate of the match records (players sorted, one row per pair)."""

    names: tuple[str, ...]
    """All players with at least one real game, sorted."""
    i: np.ndarray
    """Index of the lower-sorted player of each pair (``i < j``)."""
    j: np.ndarray
    """Index of the higher-sorted player of each pair."""
    wins: np.ndarray
    """Games won by player ``i`` against ``j``."""
    draws: np.ndarray
    """Games drawn between ``i`` and ``j``."""
    losses: np.ndarray
    """Games lost by player ``i`` against ``j``."""


def _describe(index: int, record: object) -> str:
    text = repr(record)
    if len(text) > 120:
        text = text[:117] + "..."
    return f"results[{index}] {text}"


def _validate_record(index: int, record: object) -> tuple[str, str, int, int, int]:
    """Check one record in full, raising ValueError that says which record and why."""
    if not isinstance(record, Mapping):
        raise ValueError(f"{_describe(index, record)}: expected a mapping, got {type(record).__name__}")
    missing = [key for key in _REQUIRED_KEYS if key not in record]
    if missing:
        raise ValueError(f"{_describe(index, record)}: missing key(s) {', '.join(missing)}")
    a, b = record["a"], record["b"]
    for key, name in (("a", a), ("b", b)):
        if not isinstance(name, str) or not name.strip():
            what = "an empty player name" if isinstance(name, str) else f"not a str but {type(name).__name__}"
            raise ValueError(f"{_describe(index, record)}: {key!r} is {what}")
    if a == b:
        raise ValueError(f"{_describe(index, record)}: a player cannot play itself ({a!r})")
    counts = []
    for key in _COUNT_KEYS:
        value = record[key]
        # bool is an Integral but a True "win count" is almost certainly a bug.
        if not isinstance(value, Integral) or isinstance(value, bool):
            raise ValueError(f"{_describe(index, record)}: {key!r} must be an int, got {value!r}")
        if value < 0:
            raise ValueError(f"{_describe(index, record)}: {key!r} must be non-negative, got {value!r}")
        counts.append(int(value))
    return str(a), str(b), counts[0], counts[1], counts[2]


def _aggregate(results: Iterable[Mapping[str, Any]]) -> _Pairings:
    """Validate the records and sum their counts per unordered pair of players."""
    per_pair: dict[tuple[str, str], list[int]] = {}
    for index, record in enumerate(results):
        # Fast path for the common plain-dict, plain-int record; anything unusual (or
        # wrong) goes through the full check, which also produces the error message.
        # ABC isinstance checks would otherwise dominate the cost of large leagues.
        try:
            a, b = record["a"], record["b"]
            win, draw, loss = record["win"], record["draw"], record["loss"]
            plain = (
                type(record) is dict
                and type(a) is str
                and type(b) is str
                and type(win) is int
                and type(draw) is int
                and type(loss) is int
                and win >= 0
                and draw >= 0
                and loss >= 0
                and a != b
                and not a.isspace()
                and not b.isspace()
                and a != ""
                and b != ""
            )
        except (KeyError, TypeError):  # diagnosed precisely by the full check below
            plain = False
        if not plain:
            a, b, win, draw, loss = _validate_record(index, record)
        if win + draw + loss == 0:
            # Scheduled-but-unplayed pairings must not create a pairing (and with it a
            # virtual draw) or a player, so they are dropped here.
            continue
        if b < a:
            a, b, win, loss = b, a, loss, win
        acc = per_pair.setdefault((a, b), [0, 0, 0])
        acc[0] += win
        acc[1] += draw
        acc[2] += loss

    names = tuple(sorted({name for pair in per_pair for name in pair}))
    index_of = {name: k for k, name in enumerate(names)}
    keys = sorted(per_pair)  # pairs of sorted names sort the same as pairs of indices
    i = np.fromiter((index_of[a] for a, _ in keys), dtype=np.intp, count=len(keys))
    j = np.fromiter((index_of[b] for _, b in keys), dtype=np.intp, count=len(keys))
    counts = np.array([per_pair[key] for key in keys], dtype=np.float64).reshape(-1, 3)
    return _Pairings(names, i, j, counts[:, 0], counts[:, 1], counts[:, 2])


def _format_components(names: tuple[str, ...], labels: np.ndarray, n_comp: int) -> str:
    parts = []
    for c in range(n_comp):
        members = [names[k] for k in np.flatnonzero(labels == c)]
        shown = ", ".join(members[:_MAX_NAMES_IN_ERROR])
        if len(members) > _MAX_NAMES_IN_ERROR:
            shown += f", ... (+{len(members) - _MAX_NAMES_IN_ERROR} more)"
        parts.append(f"[{shown}]")
    return "; ".join(parts)


def _check_identifiable(p: _Pairings, virtual_draws: float) -> None:
    """Raise ValueError unless the maximum-likelihood ratings exist and are unique."""
    n = len(p.names)
    ones = np.ones(len(p.i))
    graph = scipy.sparse.coo_matrix((ones, (p.i, p.j)), shape=(n, n))
    n_comp, labels = scipy.sparse.csgraph.connected_components(graph, directed=False)
    if n_comp > 1:
        raise ValueError(
            f"the pairing graph has {n_comp} disconnected components, so ratings between "
            f"them are undefined: {_format_components(p.names, labels, n_comp)}"
        )
    if virtual_draws > 0.0:
        return
    # Without virtual draws a finite optimum exists iff, in the graph with an edge
    # x -> y whenever x scored against y, every player can reach every other (Hunter
    # 2004, Assumption 1).
    scored_i = p.wins + p.draws > 0
    scored_j = p.losses + p.draws > 0
    src = np.concatenate([p.i[scored_i], p.j[scored_j]])
    dst = np.concatenate([p.j[scored_i], p.i[scored_j]])
    digraph = scipy.sparse.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    n_comp, labels = scipy.sparse.csgraph.connected_components(digraph, directed=True, connection="strong")
    if n_comp > 1:
        raise ValueError(
            "with virtual_draws=0 some ratings are infinite: the players split into "
            "groups that never scored against some other group; use virtual_draws > 0. "
            f"Groups: {_format_components(p.names, labels, n_comp)}"
        )


def _objective(
    theta_free: np.ndarray,
    pinned: int,
    i: np.ndarray,
    j: np.ndarray,
    score: np.ndarray,
    total: np.ndarray,
) -> tuple[float, np.ndarray]:
    """Negative log-likelihood and its gradient in natural-log-odds units."""
    theta = np.insert(theta_free, pinned, 0.0)
    delta = theta[i] - theta[j]
    # s*softplus(-d) + (n-s)*softplus(d) is -log L for one pair, computed without overflow.
    # Elementwise products and numpy sums rather than np.dot: a BLAS dot over ~1e4 pairs
    # wakes OpenBLAS worker threads, which on small VMs costs more than the arithmetic.
    terms = score * np.logaddexp(0.0, -delta) + (total - score) * np.logaddexp(0.0, delta)
    nll = float(terms.sum())
    resid = total * expit(delta) - score
    n = theta.shape[0]
    grad = np.bincount(i, weights=resid, minlength=n) - np.bincount(j, weights=resid, minlength=n)
    return nll, np.delete(grad, pinned)


def _pair_weights(theta: np.ndarray, i: np.ndarray, j: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Fisher information contributed by each pair: ``n * p * (1 - p)``."""
    p = expit(theta[i] - theta[j])
    return total * p * (1.0 - p)


def _laplacian_matvec(w: np.ndarray, i: np.ndarray, j: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Product of the pair-weighted graph Laplacian with ``v`` (all players)."""
    dv = w * (v[i] - v[j])
    n = v.shape[0]
    return np.bincount(i, weights=dv, minlength=n) - np.bincount(j, weights=dv, minlength=n)


def _hessp(
    theta_free: np.ndarray,
    v_free: np.ndarray,
    pinned: int,
    i: np.ndarray,
    j: np.ndarray,
    _score: np.ndarray,
    total: np.ndarray,
) -> np.ndarray:
    """Hessian-vector product without forming the Hessian (O(pairs), no BLAS)."""
    w = _pair_weights(np.insert(theta_free, pinned, 0.0), i, j, total)
    return np.delete(_laplacian_matvec(w, i, j, np.insert(v_free, pinned, 0.0)), pinned)


def _newton_step(
    theta_free: np.ndarray,
    grad: np.ndarray,
    pinned: int,
    i: np.ndarray,
    j: np.ndarray,
    total: np.ndarray,
) -> np.ndarray:
    """Solve ``H step = grad`` by Jacobi-preconditioned conjugate gradients, matrix-free.

    Matrix-free on purpose: multithreaded LAPACK factorisations of a few hundred players
    can take 100x longer than the arithmetic on small, oversubscribed machines, so the
    fit uses exactly one dense factorisation, for the covariance.
    """
    theta = np.insert(theta_free, pinned, 0.0)
    w = _pair_weights(theta, i, j, total)
    n = theta.shape[0]
    diag = np.bincount(i, weights=w, minlength=n) + np.bincount(j, weights=w, minlength=n)
    inv_diag = 1.0 / np.maximum(np.delete(diag, pinned), np.finfo(np.float64).tiny)
    m = n - 1
    hess_op = scipy.sparse.linalg.LinearOperator(
        (m, m),
        matvec=lambda v: np.delete(_laplacian_matvec(w, i, j, np.insert(v, pinned, 0.0)), pinned),
        dtype=np.float64,
    )
    jacobi = scipy.sparse.linalg.LinearOperator((m, m), matvec=lambda v: v * inv_diag)
    # A non-converged solve is still a descent step; the decrement test in the caller
    # decides convergence, so the CG status is not needed here.
    step, _ = scipy.sparse.linalg.cg(hess_op, grad, rtol=_CG_RTOL, atol=0.0, maxiter=10 * m + 100, M=jacobi)
    return step


def _hessian_full(theta: np.ndarray, i: np.ndarray, j: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Observed information for all players: a weighted Laplacian of the pairing graph."""
    n = theta.shape[0]
    w = _pair_weights(theta, i, j, total)
    h = np.zeros((n, n))
    # Pairs are unique with i < j, so plain fancy-index assignment cannot collide.
    h[i, j] = -w
    h[j, i] = -w
    h[np.diag_indices(n)] = np.bincount(i, weights=w, minlength=n) + np.bincount(j, weights=w, minlength=n)
    return h


def _inverse_cholesky_factor(h: np.ndarray) -> np.ndarray:
    """Return ``X = L^-1`` where ``h = L L'``, so that ``h^-1 = X' X``.

    Written with elementwise numpy on purpose (O(m^3 / 2), ~5 ms for 200 players,
    ~0.5 s for 1000): multithreaded LAPACK calls of this size were measured taking
    0.1-0.8 s on small oversubscribed VMs, and avoiding BLAS also makes the intervals
    bitwise independent of the BLAS build and thread count.
    """
    a = np.array(h, dtype=np.float64)
    m = a.shape[0]
    for k in range(m):
        if not a[k, k] > 0.0:
            raise np.linalg.LinAlgError("information matrix is not positive definite")
        pivot = math.sqrt(a[k, k])
        col = a[k + 1 :, k] / pivot
        a[k, k] = pivot
        a[k + 1 :, k] = col
        a[k + 1 :, k + 1 :] -= col[:, None] * col[None, :]
    x = np.zeros((m, m))
    for r in range(m):
        # Row r of L^-1 by forward substitution; L^-1 is lower triangular too.
        acc = (a[r, :r, None] * x[:r, : r + 1]).sum(axis=0)
        acc[r] -= 1.0
        x[r, : r + 1] = -acc / a[r, r]
    return x


def fit_elo(
    results: Iterable[Mapping[str, Any]],
    anchor: str = "random",
    virtual_draws: float = 1.0,
) -> EloFit:
    """Fit joint Bradley-Terry Elo ratings to match results.

    Args:
        results: Match records, each a mapping with keys ``a`` and ``b`` (player names)
            and ``win``, ``draw``, ``loss`` (non-negative ints counted from ``a``'s side).
            Other keys are ignored. Records for the same pair are summed, in either
            orientation. Records with zero games are ignored entirely: they create
            neither a player nor a pairing.
        anchor: Player pinned at rating 0. If that player has no games, the mean of all
            ratings is pinned at 0 instead and ``EloFit.anchor`` is ``None``.
        virtual_draws: Number of virtual drawn games added once to every pairing (pair
            of players with at least one real game). Must be finite and >= 0; with 0
            the fit fails if some group of players never scored against another.

    Returns:
        An :class:`EloFit` with ratings in Elo points and Wald 95% intervals from the
        observed information (see the module docstring). The anchor's rating is exactly
        0.0 with interval (0.0, 0.0). The result depends only on the summed counts per
        unordered pair, so it is bitwise identical for any record order or orientation.
        An empty input gives an empty fit.

    Raises:
        ValueError: For a malformed record (naming the record and the problem), invalid
            ``virtual_draws``, a disconnected pairing graph (naming the components), or
            an unbounded optimum when ``virtual_draws`` is 0.
        RuntimeError: If the optimiser fails to converge, which the convexity of the
            problem rules out short of numerically absurd inputs.
    """
    if (
        not isinstance(virtual_draws, Real)
        or isinstance(virtual_draws, bool)
        or not math.isfinite(virtual_draws)
        or virtual_draws < 0
    ):
        raise ValueError(f"virtual_draws must be a finite number >= 0, got {virtual_draws!r}")
    vd = float(virtual_draws)

    p = _aggregate(results)
    names = p.names
    n = len(names)
    if n == 0:
        return EloFit(ratings={}, ci95={}, anchor=None, games={})
    _check_identifiable(p, vd)

    real_games = p.wins + p.draws + p.losses
    score = p.wins + 0.5 * p.draws + 0.5 * vd
    total = real_games + vd

    anchored = anchor in names
    # Any fixed player identifies the optimum; the mean-pinned case re-centres afterwards.
    pinned = names.index(anchor) if anchored else 0

    if n > 1:
        args = (pinned, p.i, p.j, score, total)
        res = scipy.optimize.minimize(
            _objective,
            np.zeros(n - 1),
            args=args,
            jac=True,
            hessp=_hessp,
            method="trust-ncg",
            options={"gtol": _GTOL, "maxiter": _MAX_ITER},
        )
        # Near the optimum the change in the NLL (a sum of ~1e6 game terms) drops below
        # its rounding error, and the trust region may then stop short with a "bad
        # approximation" status. Plain Newton steps need only the gradient, so they
        # finish the job to machine precision and double as the convergence check.
        theta_free = res.x
        for _ in range(_MAX_POLISH):
            grad = _objective(theta_free, *args)[1]
            step = _newton_step(theta_free, grad, pinned, p.i, p.j, total)
            theta_free = theta_free - step
            # Squared Newton decrement: the distance to the optimum measured in units of
            # the ratings' own standard errors, so one tolerance fits every league size.
            if float(step @ grad) <= _DECREMENT_TOL:
                break
        else:
            raise RuntimeError(
                f"Elo fit did not converge ({res.message}); last Newton step "
                f"{np.max(np.abs(step)) * _LOGIT_TO_ELO:.3g} Elo"
            )
        h = _hessian_full(np.insert(theta_free, pinned, 0.0), p.i, p.j, total)
        x = _inverse_cholesky_factor(np.delete(np.delete(h, pinned, axis=0), pinned, axis=1))
    else:
        theta_free = np.zeros(0)
        x = np.zeros((0, 0))

    theta = np.insert(theta_free, pinned, 0.0)
    # C = X'X is the covariance with `pinned` fixed; only diag(C) and C @ 1 are needed.
    var = np.insert((x * x).sum(axis=0), pinned, 0.0)
    if not anchored:
        theta = theta - theta.mean()
        # diag(P C P) with P = I - 11'/n; the pinned player's row and column of C are 0.
        row_sums = x.sum(axis=1)
        c_ones = np.insert((x * row_sums[:, None]).sum(axis=0), pinned, 0.0)
        var = var - 2.0 * c_ones / n + float((row_sums * row_sums).sum()) / n**2
    ratings = theta * _LOGIT_TO_ELO
    half = _Z95 * np.sqrt(np.maximum(var, 0.0)) * _LOGIT_TO_ELO

    # Float sums of integer counts are exact far beyond any realistic number of games.
    games = (
        np.bincount(p.i, weights=real_games, minlength=n) + np.bincount(p.j, weights=real_games, minlength=n)
    ).astype(np.int64)
    rating_of = {name: float(ratings[k]) for k, name in enumerate(names)}
    ci95 = {name: (float(ratings[k] - half[k]), float(ratings[k] + half[k])) for k, name in enumerate(names)}
    if anchored:
        # Exact zeros, not -0.0 or rounding residue, for the pinned player.
        rating_of[anchor] = 0.0
        ci95[anchor] = (0.0, 0.0)
    return EloFit(
        ratings=rating_of,
        ci95=ci95,
        anchor=anchor if anchored else None,
        games={name: int(games[k]) for k, name in enumerate(names)},
    )


def format_ladder(fit: EloFit) -> str:
    """Render ``fit`` as an aligned text table: rank, player, Elo, 95% CI, games."""
    header = ("rank", "player", "Elo", "95% CI", "games")
    rows = [
        (str(rank), name, elo(r), f"[{elo(lo)}, {elo(hi)}]", str(fit.games.get(name, 0)))
        for rank, (name, r, lo, hi) in enumerate(fit.ladder(), start=1)
    ]
    widths = [max(len(row[c]) for row in [header, *rows]) for c in range(len(header))]
    # Numbers right-aligned so digits line up; the player name left-aligned.
    align = (">", "<", ">", ">", ">")
    lines = [
        "  ".join(f"{cell:{a}{w}}" for cell, a, w in zip(row, align, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if fit.anchor is None and rows:
        lines.append("(mean rating pinned at 0)")
    elif fit.anchor is not None:
        lines.append(f"(anchor {fit.anchor!r} pinned at 0)")
    return "\n".join(lines)
