"""The play page in a real headless Chromium (Debian's ``chromium`` + ``chromium-driver``).

Selenium drives the system browser through /usr/bin/chromedriver, passed explicitly, with
selenium-manager kept offline, so nothing is ever downloaded. The app runs on a real port with a
tiny registered champion (see test_app.py). The tests play whole games by clicking and by the
keyboard, and check every stone, that the champion only answers legal moves, the banner and the
highlighted four. Screenshots go to ``test-artifacts/`` (gitignored); with
``C4_SCREENSHOTS=docs`` the ones the README shows are also written to ``docs/img/``.

Without the browser these tests skip, unless ``C4_REQUIRE_BROWSER=1`` (set by ``.ci/run``, which
installs it) turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import requests
import torch
from mlflow.entities.model_registry import ModelVersion
from servers import headless_chromium, require_chromium
from test_app import ServerThread, blank_store, publish, publish_connect3, publish_dots

from c4core.app import ChampionSource, create_app
from c4core.figures import percent
from c4core.games import load
from c4core.games.connect4.bots import TacticalBot
from c4core.games.connect4.rules import STANDARD, Geometry, Position
from c4core.games.dots_and_boxes.rules import DotsState
from c4core.tracking.store import Tracking

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts"
DOCS_IMG = REPO / "docs" / "img"

require_chromium()

from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

STRENGTH_TAGS = {"win_vs_tactical": "0.9550", "suite_keeps_result": "0.8770", "suite_counted": "120"}
"""The measured strength the site's champion carries, as a league's tags would say it."""


@pytest.fixture(scope="module")
def champion(blank_db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Tracking, ModelVersion]:
    """A store whose champion, connect4/1 of league ``browser``, has an Elo, a win rate against
    tactical and a suite score (`STRENGTH_TAGS`)."""
    tracking = blank_store(blank_db, tmp_path_factory.mktemp("store"))
    version = publish(tracking, 1, seed=0, elo=312.0, league="browser")
    for key, value in STRENGTH_TAGS.items():
        tracking.client().set_model_version_tag(version.name, version.version, key, value)
    return tracking, version


@pytest.fixture(scope="module")
def site(champion: tuple[Tracking, ModelVersion]) -> Iterator[str]:
    tracking, _ = champion
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ServerThread(create_app(ChampionSource(tracking, refresh_s=2))) as server:
            yield server.url
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    with headless_chromium(640, 1160) as driver:
        yield driver


def screenshot(driver: webdriver.Chrome, name: str, docs: bool = False) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    if docs and os.environ.get("C4_SCREENSHOTS") == "docs":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS_IMG / path.name)
    return path


# ---- reading the page ----------------------------------------------------------------------------
def board(driver):
    return driver.find_element(By.ID, "board")


def moves_of(driver) -> str:
    return board(driver).get_attribute("data-moves")


def state_of(driver) -> str:
    return board(driver).get_attribute("data-state")


def stone_at(driver, row: int, col: int) -> str | None:
    """'p1', 'p2' or None for the cell at (row from the top, col)."""
    cell = driver.find_element(By.CSS_SELECTOR, f'.cell[data-row="{row}"][data-col="{col}"]')
    stones = cell.find_elements(By.CSS_SELECTOR, ".stone")
    if not stones:
        return None
    classes = stones[0].get_attribute("class").split()
    return "p1" if "p1" in classes else "p2"


def wait_settled(driver, timeout: float = 20) -> str:
    """Wait until it is the human's turn or the game is over; returns the state."""
    WebDriverWait(driver, timeout).until(lambda d: state_of(d) in ("your-turn", "over", "error"))
    state = state_of(driver)
    assert state != "error", driver.find_element(By.ID, "status").text
    return state


def landing_row(moves: str, col: int, geometry: Geometry = STANDARD) -> int:
    """Row (from the top) where a stone dropped in `col` lands after `moves`."""
    return geometry.rows - 1 - moves.count(str(col + 1))


def check_board(driver, moves: str, geometry: Geometry = STANDARD) -> None:
    """Every cell of the page shows exactly the stones `moves` put there."""
    expected = Position.from_moves(moves, geometry).board()
    cells = driver.execute_script(
        "return [...document.querySelectorAll('.cell')].map(c => [+c.dataset.row, +c.dataset.col,"
        " c.querySelector('.stone.p1') ? 1 : c.querySelector('.stone.p2') ? 2 : 0]);"
    )
    assert len(cells) == geometry.cells
    for r, c, v in cells:
        assert expected[r][c] == v, f"cell {r},{c} after {moves}"


def play_game(
    driver, human: int, by_keyboard: bool = False, seed: int = 0, geometry: Geometry = STANDARD
) -> str:
    """Play to the end as `human` (1 or 2), choosing moves with the tactical bot; returns the moves.

    After every move: the human's stone lies where it fell, the champion's answer is a legal move
    whose stone lies where it fell, and the whole board matches the move list.
    """
    from selenium.webdriver.common.action_chains import ActionChains

    gen = torch.Generator().manual_seed(seed)
    bot = TacticalBot()
    champion = 3 - human
    while wait_settled(driver) == "your-turn":
        moves = moves_of(driver)
        pos = Position.from_moves(moves, geometry)
        assert pos.to_move == human
        col = bot.act_position(pos, gen)
        row = landing_row(moves, col, geometry)
        if by_keyboard:
            ActionChains(driver).send_keys(str(col + 1)).perform()
        else:
            driver.find_element(By.CSS_SELECTOR, f'.col[data-col="{col}"]').click()
        want = moves + str(col + 1)
        WebDriverWait(driver, 10).until(lambda d, want=want: moves_of(d).startswith(want))
        assert stone_at(driver, row, col) == f"p{human}"
        state = wait_settled(driver)
        after = moves_of(driver)
        if state == "over" and len(after) == len(moves) + 1:
            break  # your move ended the game
        assert len(after) == len(moves) + 2, after
        reply = int(after[-1]) - 1
        before_reply = Position.from_moves(moves + str(col + 1), geometry)
        assert reply in before_reply.legal_moves(), f"the champion answered an illegal column {reply + 1}"
        assert stone_at(driver, landing_row(after[:-1], reply, geometry), reply) == f"p{champion}"
        check_board(driver, after, geometry)
    final = moves_of(driver)
    check_board(driver, final, geometry)
    return final


def check_result(driver, moves: str, human: int, geometry: Geometry = STANDARD) -> str:
    """The banner names the result and, after a win, exactly the winning stones glow."""
    pos = Position.from_moves(moves, geometry)
    assert pos.is_terminal
    banner = driver.find_element(By.ID, "banner")
    WebDriverWait(driver, 5).until(lambda d: banner.is_displayed())
    text = driver.find_element(By.ID, "banner-text").text
    glowing = driver.execute_script(
        "return [...document.querySelectorAll('.stone.win')].map(s => "
        "[+s.parentElement.dataset.row, +s.parentElement.dataset.col]);"
    )
    if not pos.won:
        assert text == "It's a draw." and glowing == []
        return "draw"
    winner = 3 - pos.to_move
    assert text == ("You win!" if winner == human else "The champion wins.")
    assert len(glowing) >= geometry.connect
    grid = pos.board()
    assert all(grid[r][c] == winner for r, c in glowing)
    cells = {tuple(x) for x in glowing}
    in_line = any(
        all((r + k * dr, c + k * dc) in cells for k in range(geometry.connect))
        for r, c in cells
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1))
    )
    assert in_line, f"the glowing stones {sorted(cells)} hold no {geometry.connect} in a row"
    return "won" if winner == human else "lost"


RESULT_WORDS = {"won": "you won", "lost": "the champion won", "draw": "a draw"}
RESULT_VALUE = {"won": -1.0, "lost": 1.0, "draw": 0.0}  # the gauge reads the champion's value


def check_gauge_shows(driver, result: str) -> None:
    """The gauge agrees with the banner: it names `result` (``won`` is the human's win) and sits
    at that end of its scale, not at the champion's last estimate."""
    banner = driver.find_element(By.ID, "banner-text").text
    assert banner == {"won": "You win!", "lost": "The champion wins.", "draw": "It's a draw."}[result]
    text = driver.find_element(By.ID, "gauge-text").text
    assert text == f"Result: {RESULT_WORDS[result]}."
    assert "balanced" not in text and "winning" not in text
    gauge = driver.find_element(By.ID, "gauge")
    assert gauge.get_attribute("data-result") == result
    assert float(gauge.get_attribute("data-value")) == RESULT_VALUE[result]
    assert float(gauge.get_attribute("aria-valuenow")) == RESULT_VALUE[result]
    fill = driver.execute_script("return document.getElementById('gauge-fill').style.width")
    assert fill == {"won": "100%", "lost": "0%", "draw": "50%"}[result]
    assert driver.find_element(By.ID, "gauge-title").text == "result"


def rects(driver, selector: str) -> list[dict]:
    """The bounding boxes (viewport pixels) of the elements `selector` matches."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.getBoundingClientRect().toJSON());",
        selector,
    )


def page_top(driver, selector: str) -> float:
    """Where an element's top edge lies on the page (not the viewport), in pixels."""
    return driver.execute_script(
        "return document.querySelector(arguments[0]).getBoundingClientRect().top + window.scrollY;", selector
    )


def overlap(a: dict, b: dict) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and b["top"] < a["bottom"]
    )


def check_banner_covers_nothing(driver) -> None:
    """The result banner shows, within the page's width, and its box meets neither the probability
    bars nor any cell of the board's top row; those cells are what a click there would hit."""
    (banner,) = rects(driver, "#banner")
    assert banner["width"] > 0 and banner["height"] > 0, "the banner is not shown"
    width = driver.execute_script("return document.documentElement.clientWidth")
    assert banner["left"] >= 0 and banner["right"] <= width
    (probs,) = rects(driver, "#probs")
    assert not overlap(banner, probs), f"the banner {banner} covers the probability bars {probs}"
    for bar in rects(driver, "#probs .prob"):
        assert not overlap(banner, bar), "the banner covers a probability bar"
    top_row = rects(driver, '.cell[data-row="0"]')
    assert len(top_row) == 7
    for cell in top_row:
        assert not overlap(banner, cell), f"the banner {banner} covers a top-row cell {cell}"
    hits = driver.execute_script(
        "document.getElementById('board').scrollIntoView({block: 'center'});"
        "return [...document.querySelectorAll('.cell[data-row=\"0\"]')].map(c => {"
        " const r = c.getBoundingClientRect();"
        " return c.contains(document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2)); });"
    )
    assert hits == [True] * 7, "something lies on top of the board's top row"


def new_game(driver, first: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f'input[name="first"][value="{first}"]').click()
    driver.find_element(By.ID, "new-game").click()


# ---- the tests -----------------------------------------------------------------------------------
def test_a_whole_game_by_clicking(site: str, browser) -> None:
    browser.get(site)
    WebDriverWait(browser, 20).until(
        lambda d: d.find_element(By.ID, "champ-name").text.startswith("connect4/1")
    )
    assert browser.find_element(By.ID, "champ-gen").text == "1"
    assert browser.find_element(By.ID, "champ-elo").text == "312.0"
    assert browser.find_element(By.ID, "champ-promoted").text not in ("", "–")
    assert wait_settled(browser) == "your-turn" and moves_of(browser) == ""

    # a few moves in: the probabilities and the gauge show the champion's view
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        moves = moves_of(browser)
        col = TacticalBot().act_position(Position.from_moves(moves), gen)
        browser.find_element(By.CSS_SELECTOR, f'.col[data-col="{col}"]').click()
        assert wait_settled(browser) == "your-turn"
    pcts = [p.text for p in browser.find_elements(By.CSS_SELECTOR, "#probs .prob .pct")]
    assert len(pcts) == 7 and all(p.endswith("%") for p in pcts)
    assert 95 <= sum(int(p[:-1]) for p in pcts) <= 105
    assert len(browser.find_elements(By.CSS_SELECTOR, "#probs .prob.chosen")) == 1
    value = float(browser.find_element(By.ID, "gauge").get_attribute("data-value"))
    assert -1 <= value <= 1 and "value" in browser.find_element(By.ID, "gauge-text").text
    time.sleep(0.5)  # let the last stone land
    screenshot(browser, "play", docs=True)

    moves = play_game(browser, human=1)
    result = check_result(browser, moves, human=1)
    assert result in ("won", "lost")  # this seeded game has a winner
    check_gauge_shows(browser, result)
    check_banner_covers_nothing(browser)
    screenshot(browser, "play-over", docs=True)


def test_the_champion_moves_first_and_keys_1_to_7_play(site: str, browser) -> None:
    browser.get(site)
    wait_settled(browser)
    new_game(browser, "champion")
    assert wait_settled(browser) == "your-turn"
    first = moves_of(browser)
    assert len(first) == 1 and board(browser).get_attribute("data-human") == "2"
    assert stone_at(browser, 5, int(first) - 1) == "p1"  # the champion's red stone, on the bottom row
    moves = play_game(browser, human=2, by_keyboard=True, seed=1)
    check_gauge_shows(browser, check_result(browser, moves, human=2))
    check_banner_covers_nothing(browser)
    screenshot(browser, "play-champion-first")


def test_the_page_has_its_controls_and_keys_1_to_7_drop_stones(site: str, browser) -> None:
    """What the issue asks the page for is there, each of keys 1-7 drops a stone in its column
    (other keys none), and the page talks only to its own server's API."""
    from selenium.webdriver.common.action_chains import ActionChains

    browser.get(site)
    for needle in ("new-game", "undo", "strength", "probs", "gauge", "banner"):
        assert browser.find_elements(By.ID, needle), needle
    assert len(browser.find_elements(By.CSS_SELECTOR, 'input[name="first"]')) == 2
    viewport = browser.find_element(By.CSS_SELECTOR, 'meta[name="viewport"]').get_attribute("content")
    assert "width=device-width" in viewport
    new_game(browser, "you")
    wait_settled(browser)
    for key in "1234567":
        if wait_settled(browser) == "over":  # the champion (or a lucky row of yours) won: start again
            ActionChains(browser).send_keys("n").perform()
            assert wait_settled(browser) == "your-turn" and moves_of(browser) == ""
        moves = moves_of(browser)
        ActionChains(browser).send_keys("0", "8", "9", "x").perform()
        assert moves_of(browser) == moves, "a key other than 1-7 played"
        col = int(key) - 1
        ActionChains(browser).send_keys(key).perform()
        want = moves + key
        WebDriverWait(browser, 10).until(lambda d, want=want: moves_of(d).startswith(want))
        assert stone_at(browser, landing_row(moves, col), col) == "p1"
    wait_settled(browser)
    urls = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name);")
    assert {site + "/api/champion", site + "/api/move"} <= set(urls)
    assert all(url.startswith(site + "/") for url in urls), "the page loaded something from elsewhere"


def test_undo_takes_back_your_move_and_the_answer_and_new_game_clears(site: str, browser) -> None:
    browser.get(site)
    wait_settled(browser)
    new_game(browser, "you")
    wait_settled(browser)
    undo = browser.find_element(By.ID, "undo")
    assert not undo.is_enabled()
    for col in (3, 3):
        browser.find_element(By.CSS_SELECTOR, f'.col[data-col="{col}"]').click()
        wait_settled(browser)
    assert len(moves_of(browser)) == 4
    undo.click()
    assert moves_of(browser) == moves_of(browser)[:2] and len(moves_of(browser)) == 2
    check_board(browser, moves_of(browser))
    browser.find_element(By.TAG_NAME, "body").send_keys("u")
    assert moves_of(browser) == "" and not undo.is_enabled()
    browser.find_element(By.CSS_SELECTOR, '.col[data-col="0"]').click()
    wait_settled(browser)
    browser.find_element(By.ID, "new-game").click()
    assert wait_settled(browser) == "your-turn" and moves_of(browser) == ""
    check_board(browser, "")


def test_a_full_column_says_so_by_click_and_by_key_and_plays_nothing(site: str, browser) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    browser.get(site)
    wait_settled(browser)
    new_game(browser, "you")
    wait_settled(browser)
    # column 4 filled without a winner, your move: set on the page itself, as no champion can be
    # made to fill a column
    browser.execute_script("state.moves = '444444'; render(false);")
    check_board(browser, "444444")
    asked = "return performance.getEntriesByType('resource').filter(e => e.name.endsWith('/api/move')).length"
    before = browser.execute_script(asked)
    status = browser.find_element(By.ID, "status")
    for act in (
        lambda: browser.find_element(By.CSS_SELECTOR, '.col[data-col="3"]').click(),
        lambda: ActionChains(browser).send_keys("4").perform(),
    ):
        browser.execute_script("state.full = null; render(false);")
        assert status.get_attribute("data-full") == ""
        act()
        WebDriverWait(browser, 5).until(lambda d: status.get_attribute("data-full") == "4")
        assert status.text == "Column 4 is full: choose another column."
        assert moves_of(browser) == "444444" and state_of(browser) == "your-turn"
    assert browser.execute_script(asked) == before, "a full column reached the champion"
    # another column plays, and the message goes
    browser.find_element(By.CSS_SELECTOR, '.col[data-col="0"]').click()
    assert wait_settled(browser) == "your-turn" and moves_of(browser).startswith("4444441")
    assert status.get_attribute("data-full") == "" and "Your move" in status.text


def test_search_strength_answers_too(site: str, browser) -> None:
    browser.get(site)
    wait_settled(browser)
    Select(browser.find_element(By.ID, "strength")).select_by_value("64")
    browser.find_element(By.CSS_SELECTOR, '.col[data-col="3"]').click()
    assert wait_settled(browser) == "your-turn" and len(moves_of(browser)) == 2
    assert "after 64 simulations" in browser.find_element(By.ID, "gauge-text").text
    Select(browser.find_element(By.ID, "strength")).select_by_value("256+16")
    browser.find_element(By.CSS_SELECTOR, '.col[data-col="3"]').click()
    assert wait_settled(browser) == "your-turn" and len(moves_of(browser)) == 4
    assert "endgames from 16 stones solved exactly" in browser.find_element(By.ID, "gauge-text").text


def test_the_page_fits_a_phone(site: str, browser) -> None:
    browser.set_window_size(400, 800)
    try:
        browser.get(site)
        wait_settled(browser)
        browser.find_element(By.CSS_SELECTOR, '.col[data-col="3"]').click()
        wait_settled(browser)
        width = browser.execute_script("return document.documentElement.clientWidth")
        scroll = browser.execute_script("return document.documentElement.scrollWidth")
        assert scroll <= width, "the page scrolls sideways on a phone"
        rect = browser.execute_script(
            "return document.getElementById('board').getBoundingClientRect().toJSON()"
        )
        assert rect["left"] >= 0 and rect["right"] <= width and rect["width"] > 300
        for col in browser.find_elements(By.CSS_SELECTOR, ".col"):
            assert col.size["width"] >= 40  # big enough to tap
        # the board and who is winning, without scrolling
        browser.execute_script("window.scrollTo(0, 0)")
        height = browser.execute_script("return window.innerHeight")
        for part in (".gauge-wrap", "#board"):
            (box,) = rects(browser, part)
            assert box["bottom"] <= height, f"{part} ends at {box['bottom']:.0f} px, below {height}"
        time.sleep(0.5)
        screenshot(browser, "play-phone", docs=True)
    finally:
        browser.set_window_size(640, 1160)


def test_at_the_end_the_gauge_shows_the_result_and_the_banner_covers_nothing(site: str, browser) -> None:
    """Issue #15: the gauge said "balanced game" while the banner announced a result, and the
    banner lay over the board's top rows and the probability bars. Now the gauge shows the result
    the banner names, and the banner takes the status line's place: the board does not move, and
    nothing of it is covered, on a desktop or a phone."""
    from selenium.webdriver.common.action_chains import ActionChains

    browser.get(site)
    wait_settled(browser)
    new_game(browser, "you")
    wait_settled(browser)
    board_top = page_top(browser, "#board")
    moves = play_game(browser, human=1, seed=2)
    result = check_result(browser, moves, human=1)
    check_gauge_shows(browser, result)
    assert not browser.find_element(By.ID, "status").is_displayed()  # the banner is in its place
    assert page_top(browser, "#board") == pytest.approx(board_top, abs=1), "the banner moved the board"
    check_banner_covers_nothing(browser)
    browser.set_window_size(390, 844)
    try:
        check_banner_covers_nothing(browser)
        check_gauge_shows(browser, result)
        screenshot(browser, "play-over-phone")
    finally:
        browser.set_window_size(640, 1160)

    ActionChains(browser).send_keys(Keys.ESCAPE).perform()  # tuck the banner away: the status says it
    assert not browser.find_element(By.ID, "banner").is_displayed()
    assert browser.find_element(By.ID, "status").text == f"Game over: {RESULT_WORDS[result]}."
    browser.find_element(By.ID, "undo").click()  # the game is on again: so is the estimate
    assert wait_settled(browser) == "your-turn"
    gauge = browser.find_element(By.ID, "gauge")
    assert gauge.get_attribute("data-result") == "" and browser.find_element(By.ID, "status").is_displayed()
    assert not browser.find_element(By.ID, "gauge-text").text.startswith("Result:")
    assert browser.find_element(By.ID, "gauge-title").text == "who is winning?"


def test_the_header_names_the_league_and_its_measured_strength(site: str, champion, browser) -> None:
    """The header says which league the champion comes from, its Elo, its win rate against
    tactical and its suite score, from the version's tags; a number nobody measured is said to be
    "not measured", never shown as 0 or left blank."""
    tracking, version = champion
    browser.get(site)
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "champ-tactical").text not in ("", "–"))

    def text(id_: str) -> str:
        return browser.find_element(By.ID, id_).text

    assert text("champ-league") == "browser" and text("champ-gen") == "1" and text("champ-elo") == "312.0"
    assert text("champ-tactical") == "95.5%"  # win_vs_tactical 0.9550
    assert text("champ-suite") == "87.7% of 120"  # suite_keeps_result 0.8770 of suite_counted 120
    assert not browser.find_element(By.ID, "champ-nash-tile").is_displayed()  # 6x7: no NashConv
    header = browser.find_element(By.TAG_NAME, "header")
    assert header.is_displayed() and all(x in header.text for x in ("browser", "312", "95.5%", "87.7%"))
    # the page words a rate as the model card and the CLI do (c4core.figures.percent), ties included
    rates = [n / 10000 for n in range(0, 10001, 5)]
    assert browser.execute_script("return arguments[0].map(percent)", rates) == [percent(r) for r in rates]

    client = tracking.client()

    def api_says(measured: bool) -> None:
        deadline = time.monotonic() + 20
        while True:
            info = requests.get(f"{site}/api/champion", timeout=5).json()
            if (info["win_vs_tactical"] is not None) == measured == (info["suite_keeps_result"] is not None):
                return
            assert time.monotonic() < deadline, f"the app never saw the tags change: {info}"
            time.sleep(0.2)

    try:
        for key in STRENGTH_TAGS:  # a champion that never met tactical, and no suite
            client.delete_model_version_tag(version.name, version.version, key)
        api_says(measured=False)
        browser.refresh()
        WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "champ-gen").text == "1")
        assert text("champ-tactical") == "not measured" and text("champ-suite") == "not measured"
        assert text("champ-league") == "browser" and text("champ-elo") == "312.0"
    finally:
        for key, value in STRENGTH_TAGS.items():
            client.set_model_version_tag(version.name, version.version, key, value)
        api_says(measured=True)


# ---- another board ---------------------------------------------------------------------------------
@contextlib.contextmanager
def serving(tracking: Tracking, uri: str) -> Iterator[str]:
    """The play page on a real port, following the champion at `uri`: its URL."""
    with ServerThread(create_app(ChampionSource(tracking, uri=uri, refresh_s=2))) as server:
        yield server.url


@pytest.fixture(scope="module")
def connect3_site(blank_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Tracking]]:
    """The page of a store whose champion is a Q-table of Connect-3 on 4x4 (test_app.py)."""
    tracking = blank_store(blank_db, tmp_path_factory.mktemp("store3"))
    publish_connect3(tracking, "table")
    with serving(tracking, "models:/connect3-4x4@champion") as url:
        yield url, tracking


def test_a_connect3_table_champion_plays_whole_games_on_its_own_board(
    connect3_site: tuple[str, Tracking], browser
) -> None:
    url, tracking = connect3_site
    small = Geometry(4, 4, 3)
    browser.set_window_size(640, 1160)
    browser.get(url)
    WebDriverWait(browser, 20).until(lambda d: board(d).get_attribute("data-cols") == "4")
    assert browser.find_element(By.ID, "game-title").text == "Connect-3 on 4x4"
    assert browser.title == "Connect-3 on 4x4: play the champion"
    numbers = [n.text for n in browser.find_elements(By.CSS_SELECTOR, "#colnums span")]
    assert numbers == ["1", "2", "3", "4"] and browser.find_element(By.ID, "keys").text == "1–4"
    # a table is not searched: only its own entry is on offer
    options = browser.find_elements(By.CSS_SELECTOR, "#strength option")
    assert [o.get_attribute("value") for o in options if o.is_enabled()] == ["0"]
    assert options[0].text == "Table (instant)"
    # its exact NashConv as its version's tag says it, and no suite score for this game
    (version,) = tracking.client().search_model_versions("name = 'connect3-4x4'")
    assert browser.find_element(By.ID, "champ-nash-tile").is_displayed()
    assert browser.find_element(By.ID, "champ-nash").text == version.tags["nash_conv"]
    assert browser.find_element(By.ID, "champ-suite").text == "none for this game"
    # a column past the board's is no key; whole games, with each side moving first
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).send_keys("5").perform()
    assert moves_of(browser) == ""
    results = []
    for human, first in ((1, "you"), (2, "champion")):
        new_game(browser, first)
        final = play_game(browser, human, seed=human, geometry=small)
        results.append(check_result(browser, final, human, small))
        if human == 1:
            screenshot(browser, "play-connect3", docs=True)
    assert all(r in ("won", "lost", "draw") for r in results)


@pytest.fixture(scope="module")
def dots_site(blank_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The page of a store whose champion is an untrained net of Dots and Boxes on 2x2 boxes."""
    tracking = blank_store(blank_db, tmp_path_factory.mktemp("storedots"))
    publish_dots(tracking)
    with serving(tracking, "models:/dots-and-boxes-2x2@champion") as url:
        yield url


def box_owners(state: DotsState) -> list[int]:
    """Each box's owner: 1 (the first player), 2, or 0 (nobody yet)."""
    cells = range(state.boxes.rows * state.boxes.cols)
    return [1 if state.owned[0] >> b & 1 else 2 if state.owned[1] >> b & 1 else 0 for b in cells]


def play_dots_game(driver, human: int, seed: int) -> DotsState:
    """Play lines as `human` (1 or 2) to the end: a box whenever one can be taken, else a random
    line. After every settle the page's lines are a legal game, each box shows its owner, the
    status or banner gives the score, and it is the human's turn or the game is over."""
    game = load("dots_and_boxes", rows=2, cols=2)
    rng = np.random.default_rng(seed)
    while True:
        state = wait_settled(driver)
        moves = moves_of(driver)
        pos = game.state_from_moves(moves)  # raises if the page played an illegal line
        score = f"{bin(pos.owned[0]).count('1')}-{bin(pos.owned[1]).count('1')}"
        assert board(driver).get_attribute("data-score") == score
        owners = driver.execute_script(
            "return [...document.querySelectorAll('#board .box')].map(b => "
            "b.classList.contains('p1') ? 1 : b.classList.contains('p2') ? 2 : 0);"
        )
        assert owners == box_owners(pos)
        if state == "over":
            assert pos.is_terminal
            return pos
        assert pos.current_player() == human - 1 and not pos.is_terminal
        legal = pos.legal_actions()
        taking = [a for a in legal if pos.apply(a).current_player() == pos.current_player()]
        line = int(taking[0]) if taking else int(rng.choice(legal))
        button = driver.find_element(By.CSS_SELECTOR, f'#board .line[data-line="{line}"]')
        assert button.is_enabled()
        button.click()
        WebDriverWait(driver, 10).until(lambda d, n=len(moves): len(moves_of(d)) > n)


def test_a_dots_and_boxes_champion_plays_whole_games_by_clicking_lines(dots_site: str, browser) -> None:
    browser.set_window_size(640, 1160)
    browser.get(dots_site)
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#board .line"))
    assert browser.find_element(By.ID, "game-title").text == "Dots and Boxes on 2x2 boxes"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#board .line")) == 12
    assert len(browser.find_elements(By.CSS_SELECTOR, "#board .pt")) == 9
    # each box is square and lies between its four sides (the grid of dots, lines and boxes)
    sides = ((0, 2, 6, 7), (1, 3, 7, 8), (2, 4, 9, 10), (3, 5, 10, 11))  # top, bottom, left, right
    for b, (top, bottom, left, right) in enumerate(sides):
        box = rects(browser, f'#board .box[data-box="{b}"]')[0]
        side = {n: rects(browser, f'#board .line[data-line="{n}"]')[0] for n in (top, bottom, left, right)}
        assert abs(box["width"] - box["height"]) < 2 and box["width"] > 40, box
        assert abs(box["top"] - (side[top]["top"] + side[top]["height"])) < 2, (b, box, side)
        assert abs(box["top"] + box["height"] - side[bottom]["top"]) < 2, (b, box, side)
        assert abs(box["left"] - (side[left]["left"] + side[left]["width"])) < 2, (b, box, side)
        assert abs(box["left"] + box["width"] - side[right]["left"]) < 2, (b, box, side)
    assert not browser.find_element(By.ID, "probs").is_displayed()
    assert not browser.find_element(By.ID, "keys-help").is_displayed()
    found = browser.find_elements(By.CSS_SELECTOR, "#strength option")
    options = {o.get_attribute("value"): o.is_enabled() for o in found}
    # exact endgames probe the table from the first line (the server's `endgames_from`)
    assert options["64"] and options["256+1"] and "256+16" not in options
    strength = Select(browser.find_element(By.ID, "strength"))
    strength.select_by_value("256+1")
    new_game(browser, "champion")
    wait_settled(browser)
    assert (
        "after 256 simulations, endgames from 1 line solved exactly"
        in browser.find_element(By.ID, "gauge-text").text
    )
    strength.select_by_value("0")
    for human, first in ((1, "you"), (2, "champion")):
        new_game(browser, first)
        final = play_dots_game(browser, human, seed=human)
        margin = final.margin() if human == 1 else -final.margin()
        banner = browser.find_element(By.ID, "banner-text").text
        words = "You win!" if margin > 0 else "The champion wins." if margin < 0 else "It's a draw."
        assert banner.startswith(words) and "Boxes: you" in banner, banner
        if human == 1:
            screenshot(browser, "play-dots", docs=True)
    # undo takes back the human's last line, and the champion's lines after it
    new_game(browser, "you")
    wait_settled(browser)
    browser.find_element(By.CSS_SELECTOR, '#board .line[data-line="0"]').click()
    wait_settled(browser)
    assert moves_of(browser).startswith("h0,0")
    browser.find_element(By.ID, "undo").click()
    assert moves_of(browser) == ""


def test_the_pages_dots_and_boxes_rules_agree_with_the_game(dots_site: str, browser, rng) -> None:
    """The page's twin of the rules (app.js `dotsPosition`) against `c4core`'s, over random games
    on three boards: who drew each line, each box's owner, who moves next, the score."""
    browser.get(dots_site)
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#board .line"))
    for rows, cols in ((1, 1), (2, 2), (2, 3)):
        game = load("dots_and_boxes", rows=rows, cols=cols)
        for _ in range(20):
            state, lines, movers = game.new_state(), [], []
            while not state.is_terminal:
                movers.append(state.current_player() + 1)
                lines.append(int(rng.choice(state.legal_actions())))
                state = state.apply(lines[-1])
            page = browser.execute_script(
                "const p = dotsPosition(...arguments); return {movers: p.movers, owner: p.owner, "
                "player: p.player, score: p.score, over: p.over, text: arguments[2].map("
                "a => formatLine(arguments[0], arguments[1], a))};",
                rows,
                cols,
                lines,
            )
            owner = box_owners(state)
            assert page["movers"] == movers and page["owner"] == owner
            assert page["score"] == [owner.count(1), owner.count(2)]
            assert page["over"]["winner"] == (1 if state.margin() > 0 else 2 if state.margin() < 0 else 0)
            assert page["text"] == [game.format_action(a) for a in lines]
            half = lines[: len(lines) // 2]  # and a game still on: whose move it is
            mid = game.new_state()
            for a in half:
                mid = mid.apply(a)
            page = browser.execute_script("return dotsPosition(...arguments);", rows, cols, half)
            assert page["player"] == mid.current_player() + 1 and page["over"] is None
