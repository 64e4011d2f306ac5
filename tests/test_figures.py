"""c4core.figures: a user's text cut short in messages, rates as percents, Elo to one decimal."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest

from c4core.figures import QUOTED_MAX, elo, percent, quoted


def test_short_text_is_quoted_whole_and_long_text_is_cut_with_its_length() -> None:
    assert quoted("4453") == "'4453'"
    assert quoted("x" * QUOTED_MAX) == repr("x" * QUOTED_MAX)
    assert quoted("4" * 5000) == f"{'4' * QUOTED_MAX!r}... (5,000 characters)"


def test_every_four_decimal_rate_rounds_half_up_to_a_tenth_of_a_percent() -> None:
    for n in range(10001):
        want = Decimal(n) / 100
        assert percent(n / 10000) == f"{want.quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)}%", n


@pytest.mark.parametrize(
    ("rate", "shown"),
    [(389 / 400, "97.3%"), (0.9725, "97.3%"), (0.955, "95.5%"), (0.0, "0.0%"), (1.0, "100.0%")],
)
def test_a_win_rate_reads_as_its_tag_does(rate: float, shown: str) -> None:
    assert percent(rate) == percent(float(f"{rate:.4f}")) == shown


def test_elo_has_one_decimal() -> None:
    assert elo(670.638154346685) == "670.6" and elo(-12.04) == "-12.0" and elo(312) == "312.0"
