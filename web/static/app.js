// The Spades web table: the Play tab (a person at the table with agents) and the Inspect tab
// (step through a game record, ask an agent about any position). Plain JavaScript, no library.
"use strict";

const $ = (id) => document.getElementById(id);
const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
const RED = { H: true, D: true };

// Every call is same-origin; a body is always JSON with its content type (the server refuses others).
async function api(method, path, body, signal) {
  const response = await fetch(path, {
    method, signal, credentials: "same-origin",
    headers: body === undefined ? { Accept: "application/json" } : { Accept: "application/json", "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function cardNode(card, extra = "", tag = "span", attrs = {}) {
  return el(tag, { class: `card ${RED[card.suit] ? "red" : ""} ${extra}`, "data-card": card.id,
                   "aria-label": card.text, ...attrs },
            el("span", {}, card.rank), el("span", { class: "s" }, SUITS[card.suit]));
}

function say(box, text, kind = "info") {
  box.textContent = text || "";
  box.className = `message ${text ? kind : ""}`;
}

// Where each seat sits on screen for a viewer in `seat` (play goes clockwise: the next seat is on the left).
function positions(seat, players) {
  const at = {};
  at[seat] = "bottom";
  at[(seat + 1) % players] = "left";
  if (players === 4) { at[(seat + 2) % 4] = "top"; at[(seat + 3) % 4] = "right"; }
  else at[(seat + 2) % players] = "right";
  return at;
}

// A bid the seat has made (null, undefined or negative: not yet).
const hasBid = (bid) => bid !== null && bid !== undefined && bid >= 0;

// A bid in the server's words ("nil", "blind nil", "4"; null before it is made) as a seat shows it.
function bidText(word) {
  if (word === null || word === undefined) return "";
  return /^[0-9]+$/.test(word) ? `bid ${word}` : word;
}

// The seats of each side (partners together) and the side's name as the server says it.
function sides(state) {
  return state.side_names.map((name, k) => ({ seats: state.partnerships ? [k, k + 2] : [k], name }));
}

function winnerText(winner, state) {
  if (winner === null || winner === undefined || winner < 0) return "nobody (a tie)";
  return state.side_names[winner];
}

// A side's bids so far: the sum of the numbers bid, each nil named ("3 + nil"); "" before any bid,
// "…" while a partner has yet to bid.
function sideBid(bids, seats, words) {
  const made = seats.filter((s) => hasBid(bids[s]));
  if (!made.length) return "";
  const sum = made.reduce((total, s) => total + bids[s], 0);
  const nils = words ? made.filter((s) => bids[s] === 0).map((s) => words[s]) : [];
  const numbers = made.filter((s) => !words || bids[s] !== 0);
  const parts = numbers.length || !nils.length ? [`${numbers.length ? sum : 0}`] : [];
  const text = [...parts, ...nils].join(" + ");
  return made.length < seats.length ? `${text}…` : text;
}

// What made a hand's score change, from the engine's own breakdown (record "results").
function breakdown(result, state) {
  if (!result) return "";
  const parts = [];
  if (result.contract > 0) parts.push(`contract ${result.made ? "made" : "set"} ${signed(result.contract_points)}`);
  if (result.overtrick_points) parts.push(`overtricks ${signed(result.overtrick_points)}`);
  for (const nil of result.nils || []) {
    parts.push(`${state.seat_names[nil.seat]}'s nil ${nil.kept ? "kept" : "broken"}`);
  }
  if (result.nil_points) parts.push(`nil ${signed(result.nil_points)}`);
  if (result.bags_taken) parts.push(`${result.bags_taken} bag${result.bags_taken === 1 ? "" : "s"}`);
  if (result.bag_penalties) parts.push(`bag penalty ${signed(-result.bag_penalties * (state.bag_penalty || 100))}`);
  return parts.join(", ");
}

function bagsText(state, k) {
  return state.bag_limit ? `${state.bags[k]}/${state.bag_limit} bags` : `${state.bags[k]} bags`;
}

function scoreTable(state) {
  const teams = sides(state);
  const head = el("tr", {}, el("th", {}, "Hand"), ...teams.map((team) => el("th", {}, team.name)));
  const rows = (state.hands || []).map((hand, i) => el("tr", {}, el("td", {}, `${i + 1}`),
    ...teams.map((team, k) => {
      const won = hand.tricks_taken ? ` won ${team.seats.reduce((a, s) => a + hand.tricks_taken[s], 0)}` : "";
      const bid = hand.bids ? `bid ${sideBid(hand.bids, team.seats, hand.bid_words)}` : "";
      const change = hand.score_change ? `${signed(hand.score_change[k])} → ${hand.scores[k]}` : "";
      const why = hand.results ? breakdown(hand.results[k], state) : "";
      return el("td", {}, el("span", { class: "or" }, `${bid}${won} `), change, why ? el("div", { class: "why" }, why) : null);
    })));
  const now = el("tr", {}, el("td", {}, el("b", {}, state.target_score ? `Score (bags), game to ${state.target_score}` : "Score (bags)")),
    ...teams.map((_, k) => el("td", {}, el("b", {}, `${state.scores[k]}`), ` (${bagsText(state, k)})`)));
  const contract = el("tr", { class: "this-hand" }, el("td", {}, `This hand (${state.hand_number}): bid / won`),
    ...teams.map((team) => {
      const won = team.seats.reduce((a, s) => a + state.tricks_won[s], 0);
      return el("td", {}, `${sideBid(state.bids, team.seats, state.bid_words) || "–"} / ${won}`);
    }));
  const handOver = state.over || state.phase === "hand_over" || state.phase === "game_over";   // its row says it all
  return el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows, handOver ? null : contract, now));
}

// The last finished hand, seat by seat: kept in view while the next hand is played.
function lastHandSummary(state) {
  const hands = state.hands || [];
  if (!hands.length) return [];
  const hand = hands[hands.length - 1];
  const number = hands.length;
  const seats = state.seat_names.map((name, s) => el("span", { class: "seat-result" },
    el("b", {}, name), ` ${hand.bid_words ? bidText(hand.bid_words[s]) || "no bid" : ""}, won ${hand.tricks_taken ? hand.tricks_taken[s] : "?"}`));
  const changes = sides(state).map((team, k) =>
    `${team.name} ${hand.score_change ? signed(hand.score_change[k]) : ""}`);
  return [el("span", { class: "or" }, `Hand ${number}: `), ...seats, el("span", { class: "or" }, changes.join(" · "))];
}

function signed(x) { return x > 0 ? `+${x}` : `${x}`; }

// The seat that wins a trick of {seat, card} so far: the highest spade, else the highest card of the suit led.
function trickWinner(cards) {
  let best = cards[0];
  for (const c of cards.slice(1)) {
    const suit = Math.floor(c.card.id / 13), bestSuit = Math.floor(best.card.id / 13);
    if ((suit === bestSuit && c.card.id > best.card.id) || (suit === 3 && bestSuit !== 3)) best = c;
  }
  return best.seat;
}

// ------------------------------------------------------------------------------------- settings
// Kept in the browser (localStorage): the pause on a finished trick, and sounds (off by default).
const prefs = {
  get trickPause() { const v = Number(localStorage.getItem("spades.trickPause")); return Number.isFinite(v) && localStorage.getItem("spades.trickPause") !== null ? v : 1.2; },
  get sounds() { return localStorage.getItem("spades.sounds") === "on"; },
  get keep() { return localStorage.getItem("spades.keep") === "on"; },      // keeping games: off unless chosen
};
let audio = null;
function beep(frequency, ms = 120) {
  if (!prefs.sounds) return;
  try {
    audio = audio || new AudioContext();
    const osc = audio.createOscillator(), gain = audio.createGain();
    osc.frequency.value = frequency;
    gain.gain.setValueAtTime(0.08, audio.currentTime);
    gain.gain.exponentialRampToValueAtTime(0.0001, audio.currentTime + ms / 1000);
    osc.connect(gain).connect(audio.destination);
    osc.start();
    osc.stop(audio.currentTime + ms / 1000);
  } catch (error) { /* no audio here: sounds are optional */ }
}

// ------------------------------------------------------------------------------------- Play
// `poller` is the long-poll in flight: {id, abort}. A poll belongs to one game; starting a new
// game aborts the old game's poll, and any answer about another game than `play.id` is dropped.
// `holdUntil`: a finished trick stays in view this long before the person may lead (the server
// pauses the agents the same way); `shownTrick`: the finished trick already held.
const play = { id: null, state: null, poller: null, acting: false, starting: false, holdUntil: 0, shownTrick: null,
               holdTimer: null, focus: null, summaryClosed: null, review: false, seenCards: new Set(), wasMyTurn: false };
const meta = { seatNames: null, keepDir: null };   // the seat names and the keep folder, as the server says them

async function loadOptions() {
  const options = await api("GET", "/api/options");
  meta.seatNames = options.seat_names;
  meta.keepDir = options.keep_dir;
  const seat = $("seat");
  const chosen = seat.value || "2";
  seat.replaceChildren(...meta.seatNames.map((name, s) => el("option", { value: s }, name)));
  seat.value = chosen;
  const rules = $("rules");
  rules.replaceChildren(...options.rules.map((name) => el("option", { value: name }, name)));
  const models = options.models || [];
  $("agent-names").replaceChildren(...options.agents.flatMap((name) =>
    name === "search" ? [el("option", { value: "search" }), el("option", { value: "search:budget=strong" })] :
    name === "neural" ? [el("option", { value: "neural" }), ...models.map((m) => el("option", { value: `neural:checkpoint=${m}` }))] :
    [el("option", { value: name })]));
}

// Take a state from the server if it is about the game on show and not older than the one shown.
function accept(state) {
  if (!state || state.id !== play.id) return false;
  if (play.state && play.state.id === state.id && state.version < play.state.version) return false;
  play.state = state;
  renderPlay();
  return true;
}

// Has the person made a move in the game on show (then a new game asks first)?
function invested() {
  const state = play.state;
  return !!state && !state.over && (state.hand_number > 1 || (state.log || []).some((e) => e.seat === state.seat));
}

async function startGame(event) {
  if (event) event.preventDefault();
  if (play.starting) return;                   // a double click is one game
  if (invested() && $("confirm-new").classList.contains("hidden")) {
    $("confirm-new").classList.remove("hidden");       // ask before abandoning a game the person plays
    $("confirm-yes").focus();
    return;
  }
  $("confirm-new").classList.add("hidden");
  const seat = Number($("seat").value);
  const players = meta.seatNames ? meta.seatNames.length : 4;     // the server checks the seats
  const agents = {};
  agents[(seat + 2) % players] = $("agent-partner").value.trim() || "heuristic";
  agents[(seat + 1) % players] = $("agent-left").value.trim() || "heuristic";
  agents[(seat + 3) % players] = $("agent-right").value.trim() || "heuristic";
  const seedText = $("seed").value.trim();
  const request = { seat, agents, seed: seedText === "" ? null : Number(seedText), pace: Number($("pace").value),
                    trick_pause: Number($("trick-pause").value), keep: $("keep").checked,
                    player_name: $("player-name").value.trim() || null };
  const rulesFile = $("rules-file").files[0];
  play.starting = true;
  $("start").disabled = true;
  try {
    if (rulesFile) request.rules_yaml = await rulesFile.text(); else request.rules = $("rules").value;
    say($("message"), "Dealing…");
    const state = await api("POST", "/api/games", request);
    const old = play.id;
    stopPolling();
    play.id = state.id;
    play.state = null;
    play.shownTrick = null;
    play.summaryClosed = null;
    say($("message"), "");
    accept(state);
    $("setup-box").open = false;               // the form folds away while a game runs
    history.replaceState(null, "", `#game=${state.id}`);   // a reload comes back to this game
    poll();
    if (old && old !== state.id) api("DELETE", `/api/games/${old}`).catch(() => {});   // its agents stop
    focusTable();
  } catch (error) {
    say($("message"), error.message, "error");
  } finally {
    play.starting = false;
    $("start").disabled = false;
  }
}

// The "Keep my games" switch: remembered in the browser, and applied to the game on show (the
// server writes its record from now on, or nothing more).
async function setKeep(keep) {
  localStorage.setItem("spades.keep", keep ? "on" : "off");
  const where = meta.keepDir || "the keep folder";
  try {
    if (play.id) accept(await api("POST", `/api/games/${play.id}/keep`, { keep }));
    const kept = await api("GET", "/api/kept-games");
    say($("message"), keep ? `Your games are kept in ${where} (${kept.games} so far); Export downloads them.`
      : `Your games are not kept: nothing more is written (games kept before stay in ${where}).`);
  } catch (error) {
    say($("message"), error.message, "error");
  }
}

// The game on show in the inspector (its record so far, kept or not).
async function inspectGame(id) {
  showTab("inspect");
  say($("inspect-message"), "Replaying…");
  try {
    const record = await api("GET", `/api/games/${id}/record`);
    view.source = null;
    showRecord(await api("POST", "/api/inspect", { record }));
    view.loaded = `this game: ${view.data.frames.length - 1} actions`;
    say($("inspect-message"), view.loaded);
  } catch (error) {
    say($("inspect-message"), error.message, "error");
  }
}

// The game named in the address (after a reload, or when the address is changed), if the server has it.
async function resumeGame() {
  const match = /^#game=([0-9a-f]+)$/.exec(location.hash);
  if (!match || match[1] === play.id) return;
  try {
    const state = await api("GET", `/api/games/${match[1]}`);
    stopPolling();
    play.id = state.id;
    play.state = null;
    accept(state);
    $("setup-box").open = false;
    say($("message"), "");
    poll();
  } catch (error) {
    say($("message"), "The game of this address is gone (the server no longer has it): start a new one.", "warn");
    $("setup-box").open = true;
  }
}

function stopPolling() {
  if (play.poller) play.poller.abort.abort();
  play.poller = null;
}

// Long-poll the game on show until it is over: the agents' moves, and moves made in another tab.
function poll() {
  const id = play.id;
  if (!id || (play.poller && play.poller.id === id)) return;
  stopPolling();
  const poller = { id, abort: new AbortController() };
  play.poller = poller;
  (async () => {
    try {
      while (play.id === id && play.state && !play.state.over && !play.state.error) {
        const next = await api("GET", `/api/games/${id}?since=${play.state.version}&wait=10`, undefined, poller.abort.signal);
        if (next.id !== play.id) return;
        if (next.version > play.state.version) accept(next);
      }
    } catch (error) {
      if (!poller.abort.signal.aborted && play.id === id) {
        say($("message"), error.message, "error");
        setTimeout(() => { if (play.id === id && play.poller === null) poll(); }, 2000);   // try again
      }
    } finally {
      if (play.poller === poller) play.poller = null;
    }
  })();
}

// Fetch the game on show now (after a refusal: another tab may have moved).
async function refresh() {
  try { accept(await api("GET", `/api/games/${play.id}`)); } catch (error) { /* the poll says why */ }
}

// The person's action; clicks while one is on its way are ignored (a double click is one move).
async function act(action, from) {
  const id = play.id;
  if (play.acting) return;
  play.acting = true;
  play.focus = from || play.focus;           // where the keyboard focus goes back after the re-render
  try {
    const state = await api("POST", `/api/games/${id}/action`, { action });
    if (id !== play.id) return;
    say($("message"), "");
    accept(state);
    poll();
  } catch (error) {
    if (id === play.id) { say($("message"), error.message, "warn"); refresh(); }
  } finally {
    play.acting = false;
  }
}

// One seat's box: its name, who plays it, its bid once made, its tricks once the play began,
// whether it is thinking, and (another seat's) its cards as backs.
function seatLines(state, seat, agent, backs = null) {
  const bid = bidText(state.bid_words[seat]);
  // the free signal (signals: N): the message the seat sent this hand, once sent
  const sent = state.messages && state.messages[seat] !== null && state.messages[seat] !== undefined
    ? `message ${state.messages[seat]}` : "";
  const won = state.phase === "play" || state.tricks_won[seat] > 0 ? `won ${state.tricks_won[seat]}` : "";
  return [
    el("div", { class: "name" }, state.seat_names[seat],
       state.dealer === seat ? el("span", { class: "dealer", title: "dealer" }, "D") : null),
    agent === null ? null : el("div", { class: "agent", title: agent }, agent),
    el("div", { class: "stats" }, [sent, bid, won].filter(Boolean).join(" · ") || " "),
    backs === null ? null : el("div", { class: "status" },
      state.thinking === seat ? el("span", { class: "thinking" }, "thinking…") : null),
    backs === null ? null : el("div", { class: "backs", title: `${backs} cards`, "aria-label": `${backs} cards` },
      ...Array.from({ length: Math.min(backs, 13) }, () => el("span", { class: "card-back" })),
      el("span", { class: "count" }, `${backs}`)),
  ].filter(Boolean);
}

function seatBox(state, seat, where, prefix = "pos") {
  const box = $(`${prefix}-${where}`);
  const agent = seat === state.seat ? "you" : state.agents[String(seat)];
  box.className = `seat-box pos-${where} ${state.to_act === seat ? "to-act" : ""}`;
  const backs = seat === state.seat || !state.hand_counts ? null : state.hand_counts[seat];
  box.replaceChildren(...seatLines(state, seat, agent, backs));
  return box;
}

// The middle of the table: the trick (who led, whose card wins so far), else the trick just
// finished with its winner, else what the phase is. `seen`: the cards already on show (the others
// slide in from their seat); `gather`: {at, ms}, when (performance.now()) the finished trick's
// cards go to its winner's seat and for how long (none in the inspector, a review, or reduced motion).
function renderCenter(center, state, at, finished = null, seen = null, gather = null) {
  const items = [];
  if (state.trick.length) {
    const winning = state.trick_winning ?? trickWinner(state.trick);
    state.trick.forEach((played, i) => {
      const fresh = seen && !seen.has(played.card.id);
      items.push(el("div", { class: `c-${at[played.seat]}` },
        cardNode(played.card, `${played.seat === winning ? "winning" : ""} ${fresh ? `enter from-${at[played.seat]}` : ""}`, "span",
                 { title: `${state.seat_names[played.seat]}${i === 0 ? " led" : ""}${played.seat === winning ? ", winning so far" : ""}` }),
        i === 0 ? el("span", { class: "led" }, "led") : null));
    });
    items.push(el("div", { class: "c-note" }, `${state.seat_names[winning]} winning`));
  } else if (finished) {
    for (const played of finished.cards) {
      const fresh = seen && !finished.review && !seen.has(played.card.id);     // the trick's last card comes in too
      items.push(el("div", { class: `c-${at[played.seat]} ${gather ? `gather to-${at[finished.winner]}` : ""}` },
        cardNode(played.card, `${played.seat === finished.winner ? "winner" : ""} ${fresh ? `enter from-${at[played.seat]}` : ""}`, "span",
                 { title: `${state.seat_names[played.seat]}${played.seat === finished.winner ? " wins" : ""}` })));
    }
    items.push(el("div", { class: "c-note trick-done" }, `${finished.review ? "last trick: " : ""}${state.seat_names[finished.winner]} wins the trick`));
  } else {
    items.push(el("div", { class: "c-note" }, state.phase === "play" ? "" : `${state.phase.replaceAll("_", " ")}`));
  }
  center.replaceChildren(...items);
  if (gather) gatherTo(center, $(`pos-${at[finished.winner]}`), gather);
}

// The finished trick's cards move to the winner's seat box: each slot gets the offset to it and
// the animation's delay (negative when re-drawn part-way: it resumes where it was), as custom
// properties that style.css's `gather` keyframes read.
function gatherTo(center, box, gather) {
  if (!box) return;
  const target = box.getBoundingClientRect();
  const now = performance.now();
  for (const slot of center.querySelectorAll(".gather")) {
    const r = slot.getBoundingClientRect();
    slot.style.setProperty("--dx", `${(target.left + target.width / 2 - (r.left + r.width / 2)).toFixed(0)}px`);
    slot.style.setProperty("--dy", `${(target.top + target.height / 2 - (r.top + r.height / 2)).toFixed(0)}px`);
    slot.style.setProperty("--gather-delay", `${(gather.at - now).toFixed(0)}ms`);
    slot.style.setProperty("--gather-time", `${gather.ms.toFixed(0)}ms`);
  }
}

// The system asks for reduced motion: no card moves (style.css stops every animation too).
const reducedMotion = () => window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;

// The hand just scored: each side's bid, tricks and what made its score change.
function handSummaryPanel(state) {
  const hands = state.hands || [];
  const hand = hands[hands.length - 1];
  const rows = sides(state).map((team, k) => el("div", { class: "side-result" },
    el("b", {}, team.name), " ",
    `bid ${sideBid(hand.bids, team.seats, hand.bid_words)}, won ${team.seats.reduce((a, s) => a + hand.tricks_taken[s], 0)}: `,
    el("b", {}, signed(hand.score_change[k])), ` → ${hand.scores[k]}`,
    el("div", { class: "why" }, breakdown(hand.results && hand.results[k], state) || "no change"),
    el("div", { class: "why" }, team.seats.map((s) => `${state.seat_names[s]} ${bidText(hand.bid_words[s])}, won ${hand.tricks_taken[s]}`).join(" · "))));
  return el("div", { class: "panel-over", id: "hand-summary", role: "dialog", "aria-label": `hand ${hands.length} scored` },
    el("div", { class: "title" }, state.over ? "Game over" : `Hand ${hands.length} scored`),
    state.over ? el("div", { class: "big" }, state.winner === null || state.winner === undefined || state.winner < 0
      ? "A tie" : `${winnerText(state.winner, state)} win${state.partnerships ? "" : "s"} ${state.scores[state.winner]} to ${Math.max(...state.scores.filter((_, k) => k !== state.winner))}`) : null,
    ...rows,
    state.over ? el("div", { class: "actions" },
      el("button", { type: "button", class: "primary", onclick: () => { $("setup-box").open = true; $("start").focus(); } }, "New game"),
      el("a", { href: `/api/games/${state.id}/record`, download: `spades-${state.id}.json` }, "Download the record"),
      el("button", { type: "button", onclick: () => inspectGame(state.id) }, "Inspect it"))
      : el("div", { class: "actions" }, el("button", { type: "button", id: "summary-close", onclick: () => {
          play.summaryClosed = hands.length; renderPlay(); focusTable(); } }, "Continue (Enter)")));
}

// The events of the hand in progress (the last hand's while the next has not begun), in words.
function handLog(state) {
  const log = state.log || [];
  const current = log.filter((e) => e.hand === state.hand_number);
  const events = current.length ? current : log.filter((e) => log.length && e.hand === log[log.length - 1].hand);
  const lines = [];
  for (const e of events) {
    const who = state.seat_names[e.seat];
    const a = e.action;
    let text = a.kind === "message" ? `${who} sends ${a.text}` : a.kind === "bid" ? `${who} bids ${a.text}` : a.kind === "blind_nil" ? `${who} bids blind nil`
      : a.kind === "look" ? `${who} looks at the cards` : e.phase === "passing" ? `${who} passes ${a.text}` : `${who} plays ${a.text}`;
    lines.push(el("li", {}, text));
    if (e.trick_won_by !== undefined) lines.push(el("li", { class: "won" }, `${e.trick_won_by === null ? "nobody" : state.seat_names[e.trick_won_by]} wins the trick`));
  }
  return lines;
}

function finishedTrick(state) {
  if (play.review && state.last_trick) return { ...state.last_trick, review: true };
  return !state.trick.length && state.last_trick && state.last_trick.fresh ? state.last_trick : null;
}

function renderPlay() {
  const state = play.state;
  if (!state) return;
  const hadFocus = document.activeElement && $("hand").contains(document.activeElement) ? "hand"
    : (document.activeElement && $("controls").contains(document.activeElement) ? "controls" : null);
  const focusIndex = hadFocus === "hand" ? [...$("hand").querySelectorAll(".card")].indexOf(document.activeElement) : -1;
  $("table").classList.remove("hidden");
  const at = positions(state.seat, state.players);
  for (const where of ["top", "left", "right", "bottom"]) $(`pos-${where}`).replaceChildren();
  for (let s = 0; s < state.players; s++) seatBox(state, s, at[s]);
  // a trick just finished stays in view for the pause before the person may lead
  const finished = finishedTrick(state);
  const trickKey = finished && !finished.review ? `${(state.hands || []).length}:${state.tricks_won.reduce((a, b) => a + b, 0)}` : null;
  if (trickKey && trickKey !== play.shownTrick) {
    play.shownTrick = trickKey;
    const pause = 1000 * Number($("trick-pause").value);
    play.holdUntil = performance.now() + pause;
    // the cards stay still most of the pause (0.77 s of the default 1.2 s), then go to the winner,
    // a little before the next lead can come (the agents wait the same pause from the last card)
    play.gatherMs = Math.min(350, 0.3 * pause);
    play.gatherAt = play.holdUntil - play.gatherMs - 80;
    clearTimeout(play.holdTimer);
    play.holdTimer = setTimeout(renderPlay, 1000 * Number($("trick-pause").value) + 20);
    if (state.last_trick.winner !== null) beep(state.last_trick.winner % 2 === state.seat % 2 ? 880 : 440);
  }
  const holding = performance.now() < play.holdUntil;
  const gather = finished && !finished.review && trickKey === play.shownTrick && !reducedMotion()
    ? { at: play.gatherAt, ms: play.gatherMs } : null;
  renderCenter($("center"), state, at, finished, play.seenCards, gather);
  play.seenCards = new Set((state.trick.length ? state.trick : (finished ? finished.cards : [])).map((p) => p.card.id));
  // the hand just scored (or the game's end) over the table until dismissed or the next card is played
  const scored = (state.hands || []).length;
  const showSummary = scored && (state.over || (play.summaryClosed !== scored && state.tricks_won.every((t) => t === 0)
    && !state.trick.length && !finished));
  const panel = $("table").querySelector(".panel-over");
  if (panel) panel.remove();
  if (showSummary) $("table").append(handSummaryPanel(state));
  const myTurn = state.to_act === state.seat && !state.over;
  document.title = myTurn ? "● Your turn · Spades" : "Spades table";
  if (myTurn && !play.wasMyTurn) beep(660, 80);
  play.wasMyTurn = myTurn;
  const legalIds = new Set(state.legal.map((a) => a.id));
  const received = new Set(state.received || []);
  // A card is marked playable or not only when a card is what this turn asks for; while bidding
  // (or waiting) the hand is shown as it is, and a click says what is asked instead.
  const cardTurn = myTurn && state.legal.some((a) => a.kind === "card") && !holding;
  const waitReason = () => holding ? "The trick is on show: your turn in a moment."
    : (state.over ? "The game is over." : `Wait for your turn: ${state.seat_names[state.to_act]} is to play.`);
  const cards = state.hand_hidden ? [] : state.hand.map((card, i) => {
    const legal = cardTurn && legalIds.has(card.id);
    const reason = state.illegal_reasons[String(card.id)];
    const gift = received.has(card.id);
    return cardNode(card, `${legal ? "legal" : (cardTurn ? "illegal" : "")} ${gift ? "received" : ""}`, "button", {
      type: "button", tabindex: "-1", "data-index": i,
      title: `${legal ? `play ${card.text}` : (reason || "")}${gift ? " (passed to you by your partner)" : ""}`,
      onclick: (e) => legal ? act(card.id, "hand")
        : say($("message"), reason && myTurn && !holding ? reason : waitReason(), "warn"),
    });
  });
  // a fanned hand: each card tilted by its place (CSS custom properties, set from JS: no inline style in HTML)
  cards.forEach((card, i) => {
    const off = i - (cards.length - 1) / 2;
    card.style.setProperty("--tilt", `${(off * 1.6).toFixed(1)}deg`);
    card.style.setProperty("--drop", `${(off * off * 0.45).toFixed(1)}px`);
  });
  $("hand").replaceChildren(...(state.hand_hidden
    ? [el("span", { class: "or" }, `${state.hand_size} cards face down: decide on blind nil before you look`)] : cards));
  // roving focus: one card of the hand is reached with Tab, the arrows move within the hand
  if (cards.length) {
    let target = focusIndex >= 0 ? Math.min(focusIndex, cards.length - 1) : 0;
    if (cardTurn && !cards[target].classList.contains("legal")) {
      const legal = cards.map((c, i) => c.classList.contains("legal") ? i : -1).filter((i) => i >= 0);
      if (legal.length) target = legal.reduce((best, i) => Math.abs(i - target) < Math.abs(best - target) ? i : best, legal[0]);
    }
    cards[target].tabIndex = 0;
    if (hadFocus === "hand" || play.focus === "hand") cards[target].focus();
  }
  // Bids, blind nil, or what is going on.
  const controls = [];
  if (myTurn && holding) {                     // bids wait for the trick's pause too
    controls.push(el("span", { class: "or prompt" }, "Your turn, after a look at the trick…"));
  } else if (myTurn) {
    const others = state.legal.filter((a) => a.kind !== "card");
    if (others.length) {
      controls.push(el("span", { class: "or prompt" }, state.phase === "signal"
        ? `Your message to the table, seen by all, scored by nothing (keys: 0-${others.length - 1}):`
        : state.phase === "bidding" ? `Your bid (keys: 0-9${state.tricks_per_hand > 9 ? ", 1 then 0-3 for 10-13" : ""}, n nil):`
          : "Your choice (keys: b blind nil, l look):"));
      for (const a of others) {
        controls.push(el("button", { type: "button", "data-action": a.id, class: "bid",
          title: a.kind === "bid" ? `bid ${a.text} (key ${a.bid === 0 ? "n or 0" : a.bid})`
            : a.kind === "message" ? `send ${a.text} (key ${a.message})` : a.text,
          onclick: () => act(a.id, "hand") }, a.kind === "message" ? String(a.message) : a.text));
      }
    } else if (state.phase === "passing") {
      const left = state.passes_left || 1;
      const total = state.blind_nil_pass || left;
      controls.push(el("span", { class: "or prompt" }, `Pick ${left} card${left === 1 ? "" : "s"} to pass to your partner`
        + ` (${total - left + 1} of ${total}; arrows and Enter, or click).`));
    } else {
      controls.push(el("span", { class: "or prompt" }, "Your turn: choose a card (click it, or arrows and Enter)."));
    }
  } else if (!state.over && state.to_act !== null && state.to_act !== undefined) {
    controls.push(el("span", { class: "or to-act-note" }, `${state.seat_names[state.to_act]} to act`));
  }
  if (state.error) say($("message"), state.error, "error");
  else if (state.keep_error) say($("message"), state.keep_error, "warn");
  if (typeof state.keep === "boolean") $("keep").checked = state.keep;     // the switch shows the game on show
  if (state.over) {
    controls.push(el("span", { class: "or" }, `Game over: ${winnerText(state.winner, state)} won. `),
      el("a", { href: `/api/games/${state.id}/record`, download: `spades-${state.id}.json`, id: "download" }, "Download the record"),
      el("button", { type: "button", onclick: () => inspectGame(state.id) }, "Inspect it"));
  } else {
    controls.push(el("button", { type: "button", id: "review", class: "small", "aria-pressed": play.review ? "true" : "false",
      disabled: !state.last_trick, onclick: () => { play.review = !play.review; renderPlay(); } }, play.review ? "Hide last trick" : "Last trick"),
      el("a", { href: `/api/games/${state.id}/record`, download: `spades-${state.id}.json`, class: "or" }, "record so far"));
  }
  $("controls").replaceChildren(...controls);
  if (hadFocus === "controls" || (play.focus === "hand" && !cards.length)) {
    const first = $("controls").querySelector("button[data-action]") || (cards[0] || null);
    if (first) first.focus();
  }
  play.focus = null;
  $("controls").dataset.version = String(state.version);    // which state the page shows (tests wait on it)
  $("controls").dataset.game = state.id;
  $("controls").dataset.holding = holding ? "1" : "";
  $("last-hand").replaceChildren(...lastHandSummary(state));
  $("last-hand").classList.toggle("hidden", !(state.hands || []).length);
  $("hand-log-list").replaceChildren(...handLog(state));
  $("hand-log").classList.remove("hidden");
  $("scoreboard").replaceChildren(scoreTable(state));
}

// Keyboard focus to the table: the hand's roving card, else the first bid button.
function focusTable() {
  const target = $("hand").querySelector(".card[tabindex='0']") || $("controls").querySelector("button[data-action]");
  if (target) target.focus(); else play.focus = "hand";
}

// The arrows move within the hand (roving focus); Enter or Space plays the card (it is a button).
function handKeys(event) {
  const cards = [...$("hand").querySelectorAll(".card")];
  const index = cards.indexOf(document.activeElement);
  if (index < 0) return;
  const moves = { ArrowLeft: -1, ArrowUp: -1, ArrowRight: 1, ArrowDown: 1 };
  let next = null;
  if (event.key in moves) next = (index + moves[event.key] + cards.length) % cards.length;
  else if (event.key === "Home") next = 0;
  else if (event.key === "End") next = cards.length - 1;
  if (next === null) return;
  event.preventDefault();
  cards[index].tabIndex = -1;
  cards[next].tabIndex = 0;
  cards[next].focus();
}

// Bid shortcuts: digits (1 waits a moment for 0-3: 10-13), n nil, b blind nil, l look; Escape closes the summary.
const bidKeys = { pending: null, timer: null };
function shortcutKeys(event) {
  if ($("play").classList.contains("hidden") || event.ctrlKey || event.metaKey || event.altKey) return;
  const tag = event.target.tagName;
  if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || $("setup-box").contains(event.target)) return;
  const close = $("summary-close");
  if (close && (event.key === "Escape" || (event.key === "Enter" && !$("hand").contains(event.target)
      && !$("controls").contains(event.target)))) { event.preventDefault(); close.click(); return; }
  const state = play.state;
  if (!state || state.to_act !== state.seat) return;
  const press = (id) => {
    const button = $("controls").querySelector(`button[data-action='${id}']`);
    if (button) { event.preventDefault(); button.click(); }
  };
  if (state.phase === "signal") {             // the free signal: a digit sends that message
    if (/^[0-9]$/.test(event.key)) press(68 + Number(event.key));
    return;
  }
  if (event.key === "n") press(52);
  else if (event.key === "b") press(66);
  else if (event.key === "l") press(67);
  else if (/^[0-9]$/.test(event.key) && $("controls").querySelector("button[data-action]")) {
    const digit = Number(event.key);
    clearTimeout(bidKeys.timer);
    if (bidKeys.pending === 1 && digit <= 3) { bidKeys.pending = null; press(52 + 10 + digit); return; }
    if (digit === 1 && $("controls").querySelector("button[data-action='62']")) {
      bidKeys.pending = 1;                       // 1, or the start of 10-13
      bidKeys.timer = setTimeout(() => { bidKeys.pending = null; press(53); }, 700);
      event.preventDefault();
      return;
    }
    bidKeys.pending = null;
    press(52 + digit);
  } else if (event.key in { ArrowLeft: 1, ArrowRight: 1 } && !$("hand").contains(event.target)) {
    focusTable();
  }
}

// ------------------------------------------------------------------------------------- Inspect
const view = { data: null, step: 0, source: null, loaded: "" };

async function loadRecordList() {
  try {
    const list = await api("GET", "/api/records");
    const options = list.records.map((r) => el("option", { value: r.name }, r.name));
    $("record-list").replaceChildren(options.length ? el("option", { value: "" }, `(${options.length} in ${list.folder})`)
                                                     : el("option", { value: "" }, `(none in ${list.folder})`), ...options);
  } catch (error) {
    say($("inspect-message"), error.message, "error");
  }
}

async function openRecordFile(name, index = 0) {
  if (!name) return;
  say($("inspect-message"), "Replaying…");
  try {
    view.source = { name };
    showRecord(await api("GET", `/api/records/${encodeURIComponent(name)}?index=${index}`));
    view.loaded = `${name}: ${view.data.frames.length - 1} actions`;
    say($("inspect-message"), view.loaded);
  } catch (error) {
    say($("inspect-message"), error.message, "error");
  }
}

async function uploadRecord(file, index = 0) {
  let record;
  try {
    record = JSON.parse(await file.text());
  } catch (error) {
    say($("inspect-message"), `${file.name} is not JSON: ${error.message}`, "error");
    return;
  }
  try {
    view.source = { file };
    showRecord(await api("POST", "/api/inspect", { record, index }));
    view.loaded = `${file.name}: ${view.data.frames.length - 1} actions`;
    say($("inspect-message"), view.loaded);
  } catch (error) {
    say($("inspect-message"), error.message, "error");
  }
}

function showRecord(data) {
  view.data = data;
  view.step = 0;
  $("record-index-box").classList.toggle("hidden", !(data.count > 1));
  $("record-index").max = data.count - 1;
  $("record-index").value = data.index;
  $("viewer").classList.remove("hidden");
  $("step").max = data.frames.length - 1;
  $("view-seat").replaceChildren(el("option", { value: "-1" }, "every hand (spectator)"),
    ...data.seat_names.map((name, s) => el("option", { value: s }, `${name}'s view`)));
  renderFrame();
}

// What the next action says: in one seat's view another seat's card stays hidden until played
// (a pass stays hidden: only the two partners know it).
function nextActionText(frame, seatNames, seatView) {
  const who = seatNames[frame.to_act];
  const action = frame.action;
  const seen = seatView < 0 || seatView === frame.to_act;
  if (action.kind === "message") return `${who} sends ${action.text}`;
  if (action.kind === "bid") return `${who} bids ${action.text}`;
  if (action.kind === "blind_nil") return `${who} bids blind nil`;
  if (action.kind === "look") return `${who} looks at the cards`;
  if (frame.phase === "passing") return seen ? `${who} passes ${action.text}` : `${who} passes a card`;
  return seen ? `${who} plays ${action.text}` : `${who} plays a card`;
}

// The trick finished by the previous frame's card (every card of it is on the table by then).
function finishedBefore(step) {
  const frames = view.data.frames;
  const frame = frames[step], before = frames[step - 1];
  if (!before || frame.trick.length || !before.action || before.action.kind !== "card" || before.phase !== "play") return null;
  const cards = [...before.trick, { seat: before.to_act, card: before.action.card }];
  return { cards, winner: trickWinner(cards) };
}

// Where each trick and each hand begins (the jumps).
function boundaries(kind) {
  const frames = view.data.frames;
  const marks = [];
  frames.forEach((f, i) => {
    const before = frames[i - 1];
    // in the play, an empty trick is a lead: a trick begins there
    if (kind === "hand" ? (i === 0 || f.hand_number !== before.hand_number) : (f.phase === "play" && !f.trick.length)) marks.push(i);
  });
  return marks;
}

function jump(kind, direction) {
  if (!view.data) return;
  const marks = boundaries(kind);
  const target = direction > 0 ? marks.find((i) => i > view.step) : [...marks].reverse().find((i) => i < view.step);
  go(target === undefined ? (direction > 0 ? Infinity : 0) : target);
}

function renderFrame() {
  const data = view.data;
  const frame = data.frames[view.step];
  const seatView = Number($("view-seat").value);
  const bottom = seatView >= 0 ? seatView : 2 % data.players;
  const at = positions(bottom, data.players);
  const state = { ...frame, seat_names: data.seat_names, side_names: data.side_names, partnerships: data.partnerships, seat: bottom,
                  agents: {}, thinking: null, players: data.players, last_trick: null, target_score: data.target_score,
                  bag_limit: data.bag_limit, bag_penalty: data.bag_penalty,
                  hands: data.hands.slice(0, frame.action || data.in_progress ? frame.hand_number - 1 : frame.hand_number) };
  for (const where of ["top", "left", "right", "bottom"]) $(`ipos-${where}`).replaceChildren();
  for (let s = 0; s < data.players; s++) {
    const box = $(`ipos-${at[s]}`);
    box.className = `seat-box pos-${at[s]} ${frame.to_act === s ? "to-act" : ""}`;
    // a seat sees its own hand once it has looked (before a blind nil decision it has not)
    const visible = seatView < 0 || (seatView === s && !(frame.looked && !frame.looked[s]));
    box.replaceChildren(...seatLines(state, s, data.seat_players ? data.seat_players[s] : null),
      el("div", { class: "mini-hand" }, visible ? frame.hands[s].map((c) =>
        cardNode(c, `small ${frame.action && frame.action.id === c.id && frame.to_act === s ? "winner" : ""}`))
        : `${frame.hands[s].length} cards${seatView === s ? " face down" : ""}`));
  }
  renderCenter($("icenter"), state, at, finishedBefore(view.step));
  $("step").value = view.step;
  const tricks = frame.tricks_won.reduce((a, b) => a + b, 0);
  $("step-label").textContent = `action ${view.step} of ${data.frames.length - 1} · hand ${frame.hand_number}`
    + ` · ${frame.phase === "play" ? `trick ${Math.min(tricks + 1, data.tricks_per_hand || 13)}` : frame.phase.replaceAll("_", " ")}`;
  $("next-action").textContent = frame.action
    ? `Next: ${nextActionText(frame, data.seat_names, seatView)}`
    : data.in_progress
      ? `End of the record: the game is still in progress (${data.seat_names[frame.to_act]} to act)`
      : `Final position${typeof data.winner === "number" && data.winner >= 0 ? ` · winner: ${winnerText(data.winner, data)}` : ""}`;
  $("iscoreboard").replaceChildren(scoreTable(state));
  $("analysis").replaceChildren();
}

function go(step) {
  if (!view.data) return;
  view.step = Math.max(0, Math.min(view.data.frames.length - 1, step));
  renderFrame();
}

function candidateBars(result) {
  const lines = [];
  const values = result.candidate_values ? Object.values(result.candidate_values) : [];
  const low = Math.min(0, ...values), high = Math.max(0, ...values);
  for (const a of result.legal) {
    const p = result.probabilities ? result.probabilities[String(a.id)] : undefined;
    const q = result.candidate_values ? result.candidate_values[String(a.id)] : undefined;
    if (p === undefined && q === undefined) continue;
    // a probability fills its share; a search value its place between the lowest and highest (0 included)
    const width = p !== undefined ? 100 * p : (high > low ? 100 * (q - low) / (high - low) : 50);
    const z = result.candidate_z ? result.candidate_z[String(a.id)] : undefined;
    const label = p !== undefined ? `${(100 * p).toFixed(1)}%`
      : `${q >= 0 ? "+" : ""}${q.toFixed(2)}${z !== undefined && z !== null ? ` (z ${z.toFixed(1)})` : ""}`;
    const fill = el("div", { class: `fill ${q !== undefined && q < 0 ? "neg" : ""}` });
    fill.style.width = `${Math.max(1, Math.round(width))}%`;          // set from JS: no inline style in HTML (CSP)
    lines.push(el("div", { class: `bar ${a.id === result.choice.id ? "chosen" : ""}` },
      el("span", {}, a.text), el("div", { class: "track" }, fill), el("span", { class: "num" }, label)));
  }
  return lines;
}

async function analyse() {
  if (!view.data) return;
  const frame = view.data.frames[view.step];
  if (!frame.action && !view.data.in_progress) { say($("inspect-message"), "The final position has no decision to analyse.", "warn"); return; }
  const seatView = Number($("view-seat").value);
  if (seatView >= 0 && seatView !== frame.to_act) {     // its legal moves would show a hidden hand
    say($("inspect-message"), `In ${view.data.seat_names[seatView]}'s view only ${view.data.seat_names[seatView]}'s `
        + "decisions can be analysed: choose the spectator view or the view of the seat to act.", "warn");
    return;
  }
  $("analysis").replaceChildren(el("span", { class: "or" }, "thinking…"));
  try {
    const result = await api("POST", "/api/analyse", { record_id: view.data.record_id, step: view.step,
                                                       agent: $("analyse-agent").value.trim() || "neural" });
    say($("inspect-message"), view.loaded);             // an earlier warning is no longer true
    const lines = [el("div", {}, `${view.data.seat_names[result.seat]} to act; ${result.agent} would play `,
                      el("b", {}, result.choice.text), result.recorded ? `; the record has ${result.recorded.text}.` : " (not played yet in the record).",
                      result.value !== null && result.value !== undefined ? ` Value estimate ${result.value.toFixed(1)} points.` : "")];
    lines.push(...candidateBars(result));
    if (result.candidate_values) lines.push(el("div", { class: "or" }, `search: mean play-out value of each candidate over ${result.worlds} worlds (points); z: how far each stands from the search's base action, in standard errors`));
    $("analysis").replaceChildren(...lines);
  } catch (error) {
    $("analysis").replaceChildren(el("span", { class: "message error" }, error.message));
  }
}

// ------------------------------------------------------------------------------------- wiring
function showTab(name) {
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.tab === name);
  $("play").classList.toggle("hidden", name !== "play");
  $("inspect").classList.toggle("hidden", name !== "inspect");
  if (name === "inspect") loadRecordList();
}

document.addEventListener("DOMContentLoaded", () => {
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => showTab(tab.dataset.tab));
  $("setup").addEventListener("submit", startGame);
  $("confirm-yes").addEventListener("click", () => startGame());
  $("confirm-no").addEventListener("click", () => { $("confirm-new").classList.add("hidden"); focusTable(); });
  $("trick-pause").value = String(prefs.trickPause);
  if ($("trick-pause").value === "") $("trick-pause").value = "1.2";
  $("trick-pause").addEventListener("change", (e) => localStorage.setItem("spades.trickPause", e.target.value));
  $("sounds").checked = prefs.sounds;
  $("keep").checked = prefs.keep;
  $("player-name").value = localStorage.getItem("spades.playerName") || "";
  $("player-name").addEventListener("change", (e) => localStorage.setItem("spades.playerName", e.target.value.trim()));
  $("keep").addEventListener("change", (e) => setKeep(e.target.checked));
  $("sounds").addEventListener("change", (e) => localStorage.setItem("spades.sounds", e.target.checked ? "on" : "off"));
  $("hand").addEventListener("keydown", handKeys);
  document.addEventListener("keydown", shortcutKeys);
  window.addEventListener("hashchange", resumeGame);          // a game named in the address bar
  $("open-record").addEventListener("click", () => openRecordFile($("record-list").value));
  $("upload").addEventListener("change", (e) => e.target.files[0] && uploadRecord(e.target.files[0]));
  $("first").addEventListener("click", () => go(0));
  $("prev").addEventListener("click", () => go(view.step - 1));
  $("next").addEventListener("click", () => go(view.step + 1));
  $("last").addEventListener("click", () => go(Infinity));
  $("prev-trick").addEventListener("click", () => jump("trick", -1));
  $("next-trick").addEventListener("click", () => jump("trick", 1));
  $("prev-hand").addEventListener("click", () => jump("hand", -1));
  $("next-hand").addEventListener("click", () => jump("hand", 1));
  $("step").addEventListener("input", (e) => go(Number(e.target.value)));
  $("view-seat").addEventListener("change", () => { renderFrame(); $("itable").focus(); });   // the arrows step again
  $("record-index").addEventListener("change", (e) => {
    const index = Number(e.target.value);
    if (view.source && view.source.name) openRecordFile(view.source.name, index);
    else if (view.source && view.source.file) uploadRecord(view.source.file, index);
  });
  $("analyse").addEventListener("click", analyse);
  document.addEventListener("keydown", (e) => {
    // a form control keeps its own keys (an arrow on the View menu changes the view, not the step)
    const tag = e.target.tagName;
    if ($("inspect").classList.contains("hidden") || tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
    if (e.key === "ArrowRight") { e.preventDefault(); go(view.step + 1); }
    if (e.key === "ArrowLeft") { e.preventDefault(); go(view.step - 1); }
    if (e.key === "PageDown") { e.preventDefault(); jump("trick", 1); }
    if (e.key === "PageUp") { e.preventDefault(); jump("trick", -1); }
  });
  loadOptions().then(resumeGame).catch((error) => say($("message"), error.message, "error"));
});
