// The play page: the client keeps the game (a move string such as "4453") and asks the server
// for the champion's answer to the whole game each time; undo is client-side. The board is the
// champion's (/api/champion's game): Connect Four on any board, Connect-3 on 4x4 among them, or
// Dots and Boxes, where the client keeps the lines drawn ("h0,0 v1,2").
"use strict";

let ROWS = 6, COLS = 7, CONNECT = 4;  // the standard board until the champion names its own
let DOTS = null;  // {rows, cols} of boxes when the champion plays Dots and Boxes
const CHAMPION_POLL_MS = 20000;

const $ = (id) => document.getElementById(id);
const state = {
  moves: "",          // solver notation, columns 1-7
  human: 1,           // 1 = the human moves first (red), 2 = the champion does
  token: 0,           // bumps on new game / undo, so a late answer to an old game is dropped
  thinking: false,
  error: null,
  over: null,         // null, or {winner: 0|1|2, cells: [[r, c], ...]}
  champion: null,     // the latest /api/champion info
  answer: null,       // the latest /api/move answer
  lastDrop: 0,        // when the last stone started to fall (ms)
  controller: null,   // aborts an answer that is no longer wanted
  full: null,         // a full column the human just tried (0-based), said in the status line
  unplayable: null,   // the champion's game, when this page cannot draw it
  lines: [],          // Dots and Boxes: the lines drawn, in order (action numbers)
};

// ---- rules (mirrors c4core.game; the server validates everything again) --------------------------
function grid(moves) {
  const g = Array.from({ length: ROWS }, () => Array(COLS).fill(0));
  const heights = Array(COLS).fill(0);
  for (let i = 0; i < moves.length; i++) {
    const c = Number(moves[i]) - 1;
    g[ROWS - 1 - heights[c]][c] = (i % 2) + 1;
    heights[c]++;
  }
  return { g, heights };
}
const toMove = (moves) => (moves.length % 2) + 1;
const canPlay = (moves, c) => grid(moves).heights[c] < ROWS;

function winningCells(g) {
  const cells = new Map();
  let winner = 0;
  const dirs = [[0, 1], [1, 0], [1, 1], [1, -1]];
  for (let r = 0; r < ROWS; r++) {
    for (let c = 0; c < COLS; c++) {
      const p = g[r][c];
      if (!p) continue;
      for (const [dr, dc] of dirs) {
        const run = [];
        for (let k = 0; k < CONNECT; k++) {
          const rr = r + k * dr, cc = c + k * dc;
          if (rr < 0 || rr >= ROWS || cc < 0 || cc >= COLS || g[rr][cc] !== p) break;
          run.push([rr, cc]);
        }
        if (run.length === CONNECT) {
          winner = p;
          for (const [rr, cc] of run) cells.set(`${rr},${cc}`, [rr, cc]);
        }
      }
    }
  }
  return { winner, cells: [...cells.values()] };
}

function outcome(moves) {
  const { g } = grid(moves);
  const w = winningCells(g);
  if (w.winner) return w;
  if (moves.length === ROWS * COLS) return { winner: 0, cells: [] };
  return null;
}

// ---- Dots and Boxes rules (mirror c4core/games/dots_and_boxes/rules.py: OpenSpiel's line numbers,
// a completed box moves again; test_browser.py checks them against it) ------------------------------
const lineCount = (rows, cols) => (rows + 1) * cols + rows * (cols + 1);
const hLine = (rows, cols, r, c) => r * cols + c;
const vLine = (rows, cols, r, c) => (rows + 1) * cols + r * (cols + 1) + c;
const boxSides = (rows, cols, r, c) =>
  [hLine(rows, cols, r, c), hLine(rows, cols, r + 1, c), vLine(rows, cols, r, c), vLine(rows, cols, r, c + 1)];

function formatLine(rows, cols, a) {
  const h = (rows + 1) * cols;
  return a < h ? `h${Math.floor(a / cols)},${a % cols}` : `v${Math.floor((a - h) / (cols + 1))},${(a - h) % (cols + 1)}`;
}

// the position after `lines`: who drew each (1 first, 2 second), each box's owner (0 none), the
// player to move, the score, and the result once every line is drawn
function dotsPosition(rows, cols, lines) {
  const drawn = new Set(), movers = [], owner = Array(rows * cols).fill(0);
  let player = 1;
  for (const a of lines) {
    movers.push(player);
    drawn.add(a);
    let took = false;
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const b = r * cols + c;
        if (!owner[b] && boxSides(rows, cols, r, c).every((s) => drawn.has(s))) {
          owner[b] = player;
          took = true;
        }
      }
    }
    if (!took) player = 3 - player;
  }
  const score = [1, 2].map((p) => owner.filter((o) => o === p).length);
  const done = drawn.size === lineCount(rows, cols);
  const winner = score[0] > score[1] ? 1 : score[1] > score[0] ? 2 : 0;
  return { drawn, movers, owner, player, score, over: done ? { winner, cells: [] } : null };
}

function buildDots() {
  const { rows, cols } = DOTS;
  const board = $("board");
  board.textContent = "";
  // dots and vertical lines in narrow columns, boxes and horizontal lines in wide ones
  board.style.gridTemplateColumns = Array.from({ length: 2 * cols + 1 }, (_, x) => (x % 2 ? "1fr" : "var(--dot)")).join(" ");
  for (let y = 0; y <= 2 * rows; y++) {
    for (let x = 0; x <= 2 * cols; x++) {
      let el;
      if (y % 2 === 0 && x % 2 === 0) {
        el = document.createElement("div");
        el.className = "pt";
      } else if (y % 2 === 1 && x % 2 === 1) {
        el = document.createElement("div");
        el.className = "box";
        el.dataset.box = String(((y - 1) / 2) * cols + (x - 1) / 2);
      } else {
        const a = y % 2 === 0 ? hLine(rows, cols, y / 2, (x - 1) / 2) : vLine(rows, cols, (y - 1) / 2, x / 2);
        el = document.createElement("button");
        el.type = "button";
        el.className = `line ${y % 2 === 0 ? "h" : "v"}`;
        el.dataset.line = String(a);
        el.setAttribute("aria-label", `Line ${formatLine(rows, cols, a)}`);
        el.addEventListener("click", () => humanLine(a));
      }
      board.appendChild(el);
    }
  }
}

// the lines drawn, in the game's notation: what the API takes as "moves"
const dotsMoves = () => state.lines.map((a) => formatLine(DOTS.rows, DOTS.cols, a)).join(" ");

function renderDots() {
  const { rows, cols } = DOTS;
  const pos = dotsPosition(rows, cols, state.lines);
  const last = state.lines.length ? state.lines[state.lines.length - 1] : -1;
  const yourTurn = !state.over && !state.thinking && !state.error && pos.player === state.human;
  const board = $("board");
  for (const el of board.querySelectorAll(".line")) {
    const a = Number(el.dataset.line);
    const i = state.lines.indexOf(a);
    el.className = `line ${el.classList.contains("h") ? "h" : "v"}` +
      (i >= 0 ? ` drawn p${pos.movers[i]}` : "") + (a === last ? " last" : "");
    el.disabled = i >= 0 || !yourTurn;
  }
  for (const el of board.querySelectorAll(".box")) {
    const o = pos.owner[Number(el.dataset.box)];
    el.className = o ? `box p${o}` : "box";
    el.textContent = o ? (o === state.human ? "you" : "champ") : "";
  }
  board.dataset.moves = dotsMoves();
  board.dataset.score = pos.score.join("-");
  return { yourTurn, pos };
}

// ---- drawing --------------------------------------------------------------------------------------
function buildBoard() {
  document.documentElement.style.setProperty("--cols", String(COLS));
  $("probs").hidden = $("colnums").hidden = $("keys-help").hidden = !!DOTS;
  const board = $("board");
  board.classList.toggle("dots", !!DOTS);
  board.style.gridTemplateColumns = "";
  if (DOTS) {
    buildDots();
    return;
  }
  const numbers = $("colnums");
  numbers.textContent = "";
  for (let c = 0; c < COLS; c++) {
    const n = document.createElement("span");
    n.textContent = String(c + 1);
    numbers.appendChild(n);
  }
  $("keys").textContent = `1–${COLS}`;
  board.textContent = "";
  for (let c = 0; c < COLS; c++) {
    const col = document.createElement("button");
    col.type = "button";
    col.className = "col";
    col.dataset.col = String(c);
    col.setAttribute("aria-label", `Column ${c + 1}`);
    col.addEventListener("click", () => humanMove(c));
    for (let r = 0; r < ROWS; r++) {
      const cell = document.createElement("div");
      cell.className = "cell";
      cell.dataset.row = String(r);
      cell.dataset.col = String(c);
      col.appendChild(cell);
    }
    board.appendChild(col);
  }
  const probs = $("probs");
  probs.textContent = "";
  for (let c = 0; c < COLS; c++) {
    const p = document.createElement("div");
    p.className = "prob";
    p.dataset.col = String(c);
    p.innerHTML = '<span class="pct"></span><div class="fill"></div>';
    probs.appendChild(p);
  }
}

function fallTime(rows) {
  return 0.12 + 0.035 * rows;
}

function render(animateLast) {
  if (DOTS) {
    const { yourTurn, pos } = renderDots();
    finishRender(yourTurn, pos.player);
    return;
  }
  const { g } = grid(state.moves);
  const board = $("board");
  const lastCol = state.moves.length ? Number(state.moves[state.moves.length - 1]) - 1 : -1;
  const lastRow = lastCol >= 0 ? g.findIndex((row) => row[lastCol] !== 0) : -1;
  const win = new Set((state.over ? state.over.cells : []).map(([r, c]) => `${r},${c}`));
  for (const cell of board.querySelectorAll(".cell")) {
    const r = Number(cell.dataset.row), c = Number(cell.dataset.col);
    const p = g[r][c];
    let stone = cell.firstElementChild;
    if (!p) {
      if (stone) stone.remove();
      continue;
    }
    const isLast = r === lastRow && c === lastCol;
    if (!stone || !stone.classList.contains(`p${p}`) || (isLast && animateLast)) {
      if (stone) stone.remove();
      stone = document.createElement("div");
      cell.appendChild(stone);
    }
    stone.className = `stone p${p}`;
    if (isLast) {
      stone.classList.add("last");
      if (animateLast) {
        stone.style.setProperty("--rows", String(r + 1));
        stone.style.setProperty("--fall", `${fallTime(r + 1)}s`);
        stone.classList.add("drop");
      }
    }
    if (win.has(`${r},${c}`)) stone.classList.add("win");
  }
  const yourTurn = !state.over && !state.thinking && !state.error && !state.unplayable &&
    toMove(state.moves) === state.human;
  for (const col of board.querySelectorAll(".col")) {
    // a full column stays clickable, so that a click on it is answered (renderStatus), not lost
    const full = !canPlay(state.moves, Number(col.dataset.col));
    col.disabled = !yourTurn;
    col.classList.toggle("full", full);
    col.setAttribute("aria-disabled", String(!yourTurn || full));
  }
  board.dataset.moves = state.moves;
  finishRender(yourTurn, toMove(state.moves));
}

// what both boards share: the board's state attributes, the buttons, status, answer and banner
function finishRender(yourTurn, mover) {
  const board = $("board");
  board.dataset.human = String(state.human);
  board.dataset.state = state.over ? "over" : state.error ? "error" : state.thinking ? "thinking" : "your-turn";
  board.dataset.result = state.over ? resultOf(state.over) : "";
  $("undo").disabled = !humanMoves().length;
  renderStatus(yourTurn && mover === state.human);
  renderAnswer();
  renderBanner();
}

function dot(p) {
  return `<span class="dot p${p}" aria-hidden="true"></span>`;
}

function renderStatus(yourTurn) {
  const s = $("status");
  const you = state.human, champ = 3 - state.human;
  const colour = (p) => (p === 1 ? "red" : "yellow");
  if (state.unplayable) {
    s.textContent = `The champion plays ${state.unplayable}, and this page draws Connect Four boards ` +
      "only: its moves are at POST /api/move.";
  } else if (state.error) {
    s.innerHTML = "";
    s.append(`The champion could not answer: ${state.error} `);
    const retry = document.createElement("button");
    retry.type = "button";
    retry.id = "retry";
    retry.textContent = "Try again";
    retry.addEventListener("click", () => { state.error = null; askChampion(); });
    s.appendChild(retry);
  } else if (state.over) {
    s.textContent = `Game over: ${RESULT_WORDS[resultOf(state.over)]}.`;
  } else if (state.thinking) {
    s.innerHTML = `${dot(champ)}The champion (${colour(champ)}) is thinking…`;
  } else if (yourTurn && DOTS) {
    const pos = dotsPosition(DOTS.rows, DOTS.cols, state.lines);
    const again = state.lines.length && pos.movers[pos.movers.length - 1] === you ? "You took a box: move again. " : "";
    s.innerHTML = `${dot(you)}${again}Your move: you are ${colour(you)}. Click a line. ` +
      `Boxes: you ${pos.score[you - 1]}, the champion ${pos.score[champ - 1]}.`;
  } else if (yourTurn && state.full != null) {
    s.innerHTML = `${dot(you)}Column ${state.full + 1} is full: choose another column.`;
  } else if (yourTurn) {
    s.innerHTML = `${dot(you)}Your move: you are ${colour(you)}. Click a column or press 1-${COLS}.`;
  }
  s.dataset.full = state.full != null ? String(state.full + 1) : "";
}

function renderAnswer() {
  const a = state.answer;
  for (const p of $("probs").children) {
    const c = Number(p.dataset.col);
    const v = a ? a.probs[c] : 0;
    p.querySelector(".fill").style.height = `${Math.round(v * 100)}%`;
    p.querySelector(".pct").textContent = a ? `${Math.round(v * 100)}%` : "";
    p.classList.toggle("chosen", !!a && a.column === c);
    p.title = a ? `column ${c + 1}: ${(v * 100).toFixed(1)}%` : "";
  }
  const gauge = $("gauge");
  const text = $("gauge-text");
  // the value is for the champion (the side it moved for): +1 it wins, -1 you win. Once the game
  // is over the gauge shows the result itself, at the end of the scale, not the last estimate.
  const result = state.over ? resultOf(state.over) : "";
  const v = result ? RESULT_VALUE[result] : a ? a.value : 0;
  $("gauge-fill").style.width = `${((1 - v) / 2) * 100}%`;
  gauge.setAttribute("aria-valuenow", v.toFixed(2));
  gauge.dataset.value = result || a ? v.toFixed(3) : "";
  gauge.dataset.result = result;
  $("gauge-title").textContent = result ? "result" : "who is winning?";
  if (result) {
    text.textContent = `Result: ${RESULT_WORDS[result]}.`;
  } else if (!a) {
    text.textContent = "The champion has not judged the game yet.";
  } else {
    const signed = (v >= 0 ? "+" : "−") + Math.abs(v).toFixed(2);
    const who = v > 0.25 ? "thinks it is winning" : v < -0.25 ? "thinks you are winning" : "sees a balanced game";
    const unit = DOTS ? (a.probe_from === 1 ? "line" : "lines") : "stones";
    const exact = a.probe_from ? `, endgames from ${a.probe_from} ${unit} solved exactly` : "";
    const how = a.simulations ? `after ${a.simulations} simulations${exact}` : "network only";
    text.textContent = `The champion ${who} (value ${signed}, ${how}).`;
  }
}

const RESULT_WORDS = { won: "you won", lost: "the champion won", draw: "a draw" };
const RESULT_VALUE = { won: -1, lost: 1, draw: 0 };  // for the champion, as the gauge reads

function resultOf(over) {
  if (!over.winner) return "draw";
  return over.winner === state.human ? "won" : "lost";
}

function renderBanner() {
  const banner = $("banner");
  // the banner takes the status line's place (see app.css), so only one of them shows
  $("status").hidden = !!state.over;
  if (!state.over) {
    banner.hidden = true;
    return;
  }
  const result = resultOf(state.over);
  banner.className = `banner ${result}`;
  $("banner-text").textContent =
    result === "won" ? "You win!" : result === "lost" ? "The champion wins." : "It's a draw.";
  if (DOTS) {  // the boxes each side took
    const { score } = dotsPosition(DOTS.rows, DOTS.cols, state.lines);
    $("banner-text").textContent += ` Boxes: you ${score[state.human - 1]}, the champion ${score[2 - state.human]}.`;
  }
  banner.hidden = false;
}

// a rate as a percent to one decimal, from its four-decimal value (the version tag's), halves up:
// the rule of c4core.figures.percent, so the page, the model card and the CLI read alike
function percent(x) {
  const basisPoints = Math.round(x * 10000);
  return `${(Math.floor((basisPoints + 5) / 10) / 10).toFixed(1)}%`;
}

// a field of the champion's card: its text, or, with a champion but no number, plainly so
function field(id, info, text, missing = "not measured") {
  const dd = $(id);
  dd.textContent = !info ? "–" : text != null ? text : missing;
  dd.classList.toggle("unmeasured", !!info && text == null);
  return dd;
}

function renderChampion(info) {
  $("champ-name").textContent = info ? info.name + (info.member ? ` (${info.member})` : "") : "none yet";
  field("champ-league", info, info && info.league, "not recorded");
  $("champ-gen").textContent = info && info.generation != null ? String(info.generation) : "–";
  field("champ-elo", info, info && info.elo != null ? info.elo.toFixed(1) : null);
  field("champ-tactical", info, info && info.win_vs_tactical != null ? percent(info.win_vs_tactical) : null);
  // the suites hold standard Connect Four positions; a board small enough to enumerate has an
  // exact NashConv instead
  const suiteless = info && info.game && info.game.variant !== "connect4";
  const suite = field("champ-suite", info, info && info.suite_keeps_result != null ? percent(info.suite_keeps_result) : null,
    suiteless ? "none for this game" : "not measured");
  $("champ-nash-tile").hidden = !(info && info.nash_conv != null);
  $("champ-nash").textContent = info && info.nash_conv != null ? info.nash_conv.toFixed(4) : "–";
  if (info && info.suite_keeps_result != null && info.suite_counted != null) {
    const of = document.createElement("span");
    of.className = "of";
    of.textContent = ` of ${info.suite_counted}`;
    suite.appendChild(of);
  }
  $("champ-promoted").textContent = info && info.promoted_at ? formatTime(info.promoted_at) : "–";
  $("champion").dataset.version = info ? info.name : "";
  $("champion").title = info ? `${info.uri}, moves from ${info.source}` : "";
}

function formatTime(iso) {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return iso;
  return t.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

// ---- the game -------------------------------------------------------------------------------------
function humanMoves() {
  if (DOTS) {
    const { movers } = dotsPosition(DOTS.rows, DOTS.cols, state.lines);
    return movers.flatMap((p, i) => (p === state.human ? [i] : []));
  }
  const out = [];
  for (let i = 0; i < state.moves.length; i++) if ((i % 2) + 1 === state.human) out.push(i);
  return out;
}

function play(col) {
  state.full = null;
  state.moves += String(col + 1);
  state.lastDrop = performance.now();
  state.over = outcome(state.moves);
  render(true);
}

function humanMove(col) {
  if (state.unplayable || state.over || state.thinking || state.error || toMove(state.moves) !== state.human) return;
  if (col < 0 || col >= COLS) return;
  if (!canPlay(state.moves, col)) {  // said, not silently ignored
    state.full = col;
    render(false);
    return;
  }
  play(col);
  if (!state.over) askChampion();
}

// Dots and Boxes: a line drawn, by either side; the champion moves again after taking a box
function playLine(a) {
  state.lines = [...state.lines, a];
  state.over = dotsPosition(DOTS.rows, DOTS.cols, state.lines).over;
  render(false);
}

function humanLine(a) {
  const pos = dotsPosition(DOTS.rows, DOTS.cols, state.lines);
  if (state.unplayable || state.over || state.thinking || state.error || pos.player !== state.human) return;
  if (pos.drawn.has(a)) return;
  playLine(a);
  championIfToMove();
}

// after a line: the champion moves unless the game is over or whoever drew took a box and is you
function championIfToMove() {
  if (!state.over && dotsPosition(DOTS.rows, DOTS.cols, state.lines).player !== state.human) askChampion();
}

async function askChampion() {
  const token = state.token;
  const moves = DOTS ? dotsMoves() : state.moves;
  // "256+16": 256 simulations, search leaves of 16+ moves settled by the exact solver
  const [simulations, probe_from = 0] = $("strength").value.split("+").map(Number);
  state.thinking = true;
  state.error = null;
  render(false);
  state.controller = new AbortController();
  const sent = performance.now();
  let answer;
  try {
    const r = await fetch("/api/move", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(probe_from ? { moves, simulations, probe_from } : { moves, simulations }),
      signal: state.controller.signal,
    });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.detail || `HTTP ${r.status}`);
    answer = body;
  } catch (e) {
    if (token !== state.token) return;
    state.thinking = false;
    state.error = e.name === "AbortError" ? null : e.message;
    render(false);
    return;
  }
  if (token !== state.token) return;
  const rtt = performance.now() - sent;
  const legal = DOTS
    ? Number.isInteger(answer.action) && answer.action < lineCount(DOTS.rows, DOTS.cols) &&
      !dotsPosition(DOTS.rows, DOTS.cols, state.lines).drawn.has(answer.action)
    : Number.isInteger(answer.column) && canPlay(moves, answer.column);
  if (!legal) {
    state.thinking = false;
    state.error = DOTS ? `it answered an illegal line (${answer.move})` : `it answered an illegal column (${answer.column})`;
    render(false);
    return;
  }
  if (!DOTS) {
    // let the stone you just dropped land before the champion's falls
    const wait = state.lastDrop + fallTime(ROWS) * 1000 - performance.now();
    if (wait > 0) await new Promise((ok) => setTimeout(ok, wait));
    if (token !== state.token) return;
  }
  state.thinking = false;
  state.answer = answer;
  if (answer.champion) noteChampion(answer.champion);
  $("latency").textContent = `Last answer: ${Math.round(rtt)} ms (server ${answer.ms} ms).`;
  if (DOTS) {
    playLine(answer.action);
    championIfToMove();  // it took a box: it moves again
  } else {
    play(answer.column);
  }
}

function cancelThinking() {
  state.token++;
  if (state.controller) state.controller.abort();
  state.controller = null;
  state.thinking = false;
  state.error = null;
}

function newGame() {
  cancelThinking();
  const first = document.querySelector('input[name="first"]:checked').value;
  state.human = first === "champion" ? 2 : 1;
  state.moves = "";
  state.lines = [];
  state.over = null;
  state.answer = null;
  state.full = null;
  if (state.unplayable) {
    render(false);
    return;
  }
  $("gauge-you").textContent = `You (${state.human === 1 ? "red" : "yellow"})`;
  $("gauge-champ").textContent = `Champion (${state.human === 1 ? "yellow" : "red"})`;
  document.documentElement.style.setProperty("--you", state.human === 1 ? "var(--p1)" : "var(--p2)");
  $("gauge").style.background = state.human === 1 ? "var(--p2)" : "var(--p1)";
  $("gauge-fill").style.background = state.human === 1 ? "var(--p1)" : "var(--p2)";
  render(false);
  if (state.human === 2) askChampion();
}

function undo() {
  const mine = humanMoves();
  if (!mine.length) return;
  cancelThinking();
  // back to just before your last move: you are to move again
  if (DOTS) state.lines = state.lines.slice(0, mine[mine.length - 1]);
  else state.moves = state.moves.slice(0, mine[mine.length - 1]);
  state.over = null;
  state.answer = null;
  state.full = null;
  render(false);
}

// ---- the champion ---------------------------------------------------------------------------------
// the board and the strength menu follow the champion: its game's board, and no search for a
// table (which answers from its entries); a new board starts a new game
function setGame(info) {
  const game = info.game || {
    name: "connect4", title: "Connect Four", params: { rows: 6, cols: 7, connect: 4 }, endgames_from: 16,
  };
  const dots = game.name === "dots_and_boxes" ? { rows: game.params.rows, cols: game.params.cols } : null;
  const drawable = game.name === "connect4" || !!dots;
  const unplayable = drawable ? null : game.title;
  const { rows, cols, connect } = game.name === "connect4" ? game.params : { rows: ROWS, cols: COLS, connect: CONNECT };
  const table = info.kind === "table";
  // a table answers from its entries; exact endgames ("+") probe the game's solver from the move
  // count the server names (`endgames_from`), and need one
  for (const option of $("strength").options) {
    if (option.value.includes("+") && game.endgames_from) option.value = `256+${game.endgames_from}`;
    option.disabled = (table && option.value !== "0") || (option.value.includes("+") && !game.endgames_from);
  }
  if (table) $("strength").value = "0";
  $("strength").options[0].textContent = table ? "Table (instant)" : "Network (instant)";
  $("game-title").textContent = game.title;
  document.title = `${game.title}: play the champion`;
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  if (rows === ROWS && cols === COLS && connect === CONNECT && same(dots, DOTS) && unplayable === state.unplayable) {
    return;
  }
  [ROWS, COLS, CONNECT, DOTS] = [rows, cols, connect, dots];
  if (DOTS) COLS = DOTS.cols + 2;  // the page's width (--cols): a box is wider than a column
  state.unplayable = unplayable;
  $("board").dataset.rows = String(ROWS);
  $("board").dataset.cols = String(COLS);
  buildBoard();
  newGame();
}

function noteChampion(info) {
  const before = state.champion;
  state.champion = info;
  setGame(info);
  renderChampion(info);
  if (before && info && before.name !== info.name) {
    const n = $("notice");
    n.textContent = `A new champion was promoted: ${info.name}` +
      (info.generation != null ? `, generation ${info.generation}` : "") + ". It plays from the next move.";
    n.hidden = false;
  }
}

async function pollChampion() {
  try {
    const r = await fetch("/api/champion");
    const body = await r.json().catch(() => ({}));
    if (r.ok) {
      noteChampion(body);
      if (state.error && /champion/.test(state.error)) state.error = null;
    } else {
      renderChampion(null);
      $("champ-name").textContent = body.detail ? "none yet" : `HTTP ${r.status}`;
      $("champion").title = body.detail || "";
    }
  } catch (e) {
    $("champion").title = `cannot reach the server: ${e.message}`;
  }
}

// ---- wiring ---------------------------------------------------------------------------------------
document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const tag = e.target && e.target.tagName;
  // digits would pick an option in the strength menu; radio buttons pass them on
  if (tag === "SELECT" || tag === "TEXTAREA" || (tag === "INPUT" && e.target.type !== "radio")) return;
  if (!DOTS && e.key >= "1" && e.key <= String(COLS)) {
    e.preventDefault();
    humanMove(Number(e.key) - 1);
  } else if (e.key === "n" || e.key === "N") {
    newGame();
  } else if (e.key === "u" || e.key === "U") {
    undo();
  } else if (e.key === "Escape" && !$("banner").hidden) {
    $("banner").hidden = true;
    $("status").hidden = false;  // "Game over: ..." stays in its place
  }
});

window.addEventListener("DOMContentLoaded", () => {
  buildBoard();
  $("new-game").addEventListener("click", newGame);
  $("banner-new").addEventListener("click", newGame);
  $("undo").addEventListener("click", undo);
  for (const radio of document.querySelectorAll('input[name="first"]')) radio.addEventListener("change", newGame);
  pollChampion();
  setInterval(pollChampion, CHAMPION_POLL_MS);
  newGame();
});
