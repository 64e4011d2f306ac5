"""How the project words what it shows a person: one rule per kind of figure, in one place.

- A user's own text in an error message (`quoted`): repeated when short, cut short when long.
- A rate (a win rate, a suite score) as a percent (`percent`): one decimal, from the rate to four
  decimals (the precision of the version tags, which the play page reads), halves rounded up.
  The play page's `percent` (``static/app.js``) is the same rule, so a champion's win rate reads
  the same on the page, in its model card and in the CLI.
- An Elo rating (`elo`): one decimal, everywhere (the ladder, tags, metrics, cards, the page).
"""

from __future__ import annotations

QUOTED_MAX = 40
"""The most characters of a user's text that an error message repeats."""


def quoted(text: str) -> str:
    """`text` quoted for an error message, cut short when long: a 5,000-character move string
    comes back as its first `QUOTED_MAX` characters and its length."""
    if len(text) <= QUOTED_MAX:
        return repr(text)
    return f"{text[:QUOTED_MAX]!r}... ({len(text):,} characters)"


def percent(rate: float) -> str:
    """`rate` (0..1) as a percent to one decimal, from its four-decimal value, halves up:
    0.9725 (389 of 400) reads 97.3%, where Python's own ``f"{0.9725:.1%}"`` rounds the half to
    even (97.2%) and JavaScript's ``toFixed`` rounds it up."""
    basis_points = round(float(f"{rate:.4f}") * 10000)  # exact: the tag's four digits
    return f"{(basis_points + 5) // 10 / 10:.1f}%"


def elo(rating: float) -> str:
    """An Elo rating as shown: 670.638... reads 670.6."""
    return f"{rating:.1f}"
