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

// A side's bids so far: the sum of the bids made ("" before any), "…" while a partner has yet to bid.
function sideBid(bids, seats) {
  const made = seats.filter((s) => hasBid(bids[s]));
  if (!made.length) return "";
  const sum = made.reduce((total, s) => total + bids[s], 0);
  return made.length < seats.length ? `${sum}…` : `${sum}`;
}

function scoreTable(state) {
  const teams = sides(state);
  const head = el("tr", {}, el("th", {}, "Hand"), ...teams.map((team) => el("th", {}, team.name)));
  const rows = (state.hands || []).map((hand, i) => el("tr", {}, el("td", {}, `${i + 1}`),
    ...teams.map((team, k) => {
      const won = hand.tricks_taken ? ` won ${team.seats.reduce((a, s) => a + hand.tricks_taken[s], 0)}` : "";
      const bid = hand.bids ? `bid ${sideBid(hand.bids, team.seats)}` : "";
      const change = hand.score_change ? `${signed(hand.score_change[k])} → ${hand.scores[k]}` : "";
      return el("td", {}, el("span", { class: "or" }, `${bid}${won} `), change);
    })));
  const now = el("tr", {}, el("td", {}, el("b", {}, state.target_score ? `Score (bags), game to ${state.target_score}` : "Score (bags)")),
    ...teams.map((_, k) => el("td", {}, el("b", {}, `${state.scores[k]} (${state.bags[k]})`))));
  const contract = el("tr", { class: "this-hand" }, el("td", {}, `This hand (${state.hand_number}): bid / won`),
    ...teams.map((team) => {
      const won = team.seats.reduce((a, s) => a + state.tricks_won[s], 0);
      return el("td", {}, `${sideBid(state.bids, team.seats) || "–"} / ${won}`);
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

// ------------------------------------------------------------------------------------- Play
// `poller` is the long-poll in flight: {id, abort}. A poll belongs to one game; starting a new
// game aborts the old game's poll, and any answer about another game than `play.id` is dropped.
const play = { id: null, state: null, poller: null, acting: false };
const meta = { seatNames: null };           // the seat names, as the server says them (/api/options)

async function loadOptions() {
  const options = await api("GET", "/api/options");
  meta.seatNames = options.seat_names;
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

async function startGame(event) {
  event.preventDefault();
  const seat = Number($("seat").value);
  const players = meta.seatNames ? meta.seatNames.length : 4;     // the server checks the seats
  const agents = {};
  agents[(seat + 2) % players] = $("agent-partner").value.trim() || "heuristic";
  agents[(seat + 1) % players] = $("agent-left").value.trim() || "heuristic";
  agents[(seat + 3) % players] = $("agent-right").value.trim() || "heuristic";
  const seedText = $("seed").value.trim();
  const request = { seat, agents, seed: seedText === "" ? null : Number(seedText), pace: Number($("pace").value) };
  const rulesFile = $("rules-file").files[0];
  if (rulesFile) request.rules_yaml = await rulesFile.text(); else request.rules = $("rules").value;
  say($("message"), "Dealing…");
  try {
    const state = await api("POST", "/api/games", request);
    stopPolling();
    play.id = state.id;
    play.state = null;
    say($("message"), "");
    accept(state);
    $("setup-box").open = false;               // the form folds away while a game runs
    history.replaceState(null, "", `#game=${state.id}`);   // a reload comes back to this game
    poll();
  } catch (error) {
    say($("message"), error.message, "error");
  }
}

// After a reload: the game named in the address, if the server still has it.
async function resumeGame() {
  const match = /^#game=([0-9a-f]+)$/.exec(location.hash);
  if (!match) return;
  try {
    const state = await api("GET", `/api/games/${match[1]}`);
    play.id = state.id;
    accept(state);
    $("setup-box").open = false;
    poll();
  } catch (error) {
    history.replaceState(null, "", location.pathname);
    say($("message"), `The game of this address is gone (${error.message}): start a new one.`, "warn");
  }
}

function stopPolling() {
  if (play.poller) play.poller.abort.abort();
  play.poller = null;
}

// Long-poll the game on show while it is the agents' turn; one poll per game at a time.
function poll() {
  const id = play.id;
  if (!id || (play.poller && play.poller.id === id)) return;
  stopPolling();
  const poller = { id, abort: new AbortController() };
  play.poller = poller;
  (async () => {
    try {
      while (play.id === id && play.state && !play.state.over && !play.state.error
             && play.state.to_act !== play.state.seat) {
        const next = await api("GET", `/api/games/${id}?since=${play.state.version}&wait=5`, undefined, poller.abort.signal);
        if (!accept(next)) return;
      }
    } catch (error) {
      if (!poller.abort.signal.aborted && play.id === id) say($("message"), error.message, "error");
    } finally {
      if (play.poller === poller) play.poller = null;
    }
  })();
}

// The person's action; clicks while one is on its way are ignored (a double click is one move).
async function act(action) {
  const id = play.id;
  if (play.acting) return;
  play.acting = true;
  try {
    const state = await api("POST", `/api/games/${id}/action`, { action });
    if (id !== play.id) return;
    say($("message"), "");
    accept(state);
    poll();
  } catch (error) {
    if (id === play.id) say($("message"), error.message, "warn");
  } finally {
    play.acting = false;
  }
}

// One seat's box: its name, who plays it, its bid once made, and its tricks once the play began.
function seatLines(state, seat, agent) {
  const bid = bidText(state.bid_words[seat]);
  const won = state.phase === "play" || state.tricks_won[seat] > 0 ? `won ${state.tricks_won[seat]}` : "";
  return [
    el("div", { class: `name ${state.thinking === seat ? "thinking" : ""}` }, state.seat_names[seat],
       state.dealer === seat ? el("span", { class: "dealer", title: "dealer" }, "D") : null),
    agent === null ? null : el("div", { class: "agent", title: agent }, agent),
    el("div", { class: "stats" }, [bid, won].filter(Boolean).join(" · ")),
  ].filter(Boolean);
}

function seatBox(state, seat, where, prefix = "pos") {
  const box = $(`${prefix}-${where}`);
  const agent = seat === state.seat ? "you" : state.agents[String(seat)];
  box.className = `seat-box pos-${where} ${state.to_act === seat ? "to-act" : ""}`;
  box.replaceChildren(...seatLines(state, seat, agent));
  return box;
}

function renderCenter(center, state, at) {
  const items = [];
  if (state.trick.length) {
    for (const played of state.trick) items.push(el("div", { class: `c-${at[played.seat]}` }, cardNode(played.card)));
  } else if (state.last_trick) {
    for (const played of state.last_trick.cards) {
      items.push(el("div", { class: `c-${at[played.seat]}` },
        cardNode(played.card, `dim ${played.seat === state.last_trick.winner ? "winner" : ""}`)));
    }
    items.push(el("div", { class: "c-note" }, `last trick: ${state.seat_names[state.last_trick.winner]}`));
  } else {
    items.push(el("div", { class: "c-note" }, state.phase === "play" ? "" : `${state.phase.replaceAll("_", " ")}`));
  }
  center.replaceChildren(...items);
}

function renderPlay() {
  const state = play.state;
  if (!state) return;
  $("table").classList.remove("hidden");
  const at = positions(state.seat, state.players);
  for (const where of ["top", "left", "right", "bottom"]) $(`pos-${where}`).replaceChildren();
  for (let s = 0; s < state.players; s++) seatBox(state, s, at[s]);
  renderCenter($("center"), state, at);
  const myTurn = state.to_act === state.seat && !state.over;
  const legalIds = new Set(state.legal.map((a) => a.id));
  // A card is marked playable or not only when a card is what this turn asks for; while bidding
  // (or waiting) the hand is shown as it is, and a click says what is asked instead.
  const cardTurn = myTurn && state.legal.some((a) => a.kind === "card");
  $("hand").replaceChildren(...(state.hand_hidden
    ? [el("span", { class: "or" }, `${state.hand_size} cards face down: decide on blind nil before you look`)]
    : state.hand.map((card) => {
      const legal = cardTurn && legalIds.has(card.id);
      const reason = state.illegal_reasons[String(card.id)];
      return cardNode(card, legal ? "legal" : (cardTurn ? "illegal" : ""), "button", {
        type: "button", title: legal ? `play ${card.text}` : (reason || ""),
        onclick: () => legal ? act(card.id) : (reason ? say($("message"), reason, "warn") : null),
      });
    })));
  // Bids, blind nil, or what is going on.
  const controls = [];
  if (myTurn) {
    const others = state.legal.filter((a) => a.kind !== "card");
    if (others.length) {
      controls.push(el("span", { class: "or" }, state.phase === "bidding" ? "Your bid:" : "Your choice:"));
      for (const a of others) controls.push(el("button", { type: "button", "data-action": a.id, onclick: () => act(a.id) }, a.text));
    } else if (state.phase === "passing") {
      controls.push(el("span", { class: "or" }, "Pick a card to pass to your partner."));
    } else {
      controls.push(el("span", { class: "or" }, "Your turn: click a card."));
    }
  } else if (!state.over && state.to_act !== null && state.to_act !== undefined) {
    controls.push(el("span", { class: "or to-act-note" }, `${state.seat_names[state.to_act]} to act`));
  }
  if (state.error) say($("message"), state.error, "error");
  if (state.over) {
    controls.push(el("span", { class: "or" }, `Game over: ${winnerText(state.winner, state)} won. `),
      el("a", { href: `/api/games/${state.id}/record`, download: `spades-${state.id}.json`, id: "download" }, "Download the record"),
      el("button", { type: "button", onclick: () => { showTab("inspect"); openRecordFile(`web-${state.id}.json`); } }, "Inspect it"));
  } else {
    controls.push(el("a", { href: `/api/games/${state.id}/record`, download: `spades-${state.id}.json`, class: "or" }, "record so far"));
  }
  $("controls").replaceChildren(...controls);
  $("controls").dataset.version = String(state.version);    // which state the page shows (tests wait on it)
  $("controls").dataset.game = state.id;
  $("last-hand").replaceChildren(...lastHandSummary(state));
  $("last-hand").classList.toggle("hidden", !(state.hands || []).length);
  $("scoreboard").replaceChildren(scoreTable(state));
}

// ------------------------------------------------------------------------------------- Inspect
const view = { data: null, step: 0, source: null };

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
    say($("inspect-message"), `${name}: ${view.data.frames.length - 1} actions`);
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
    say($("inspect-message"), `${file.name}: ${view.data.frames.length - 1} actions`);
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
  if (action.kind === "bid") return `${who} bids ${action.text}`;
  if (action.kind === "blind_nil") return `${who} bids blind nil`;
  if (action.kind === "look") return `${who} looks at the cards`;
  if (frame.phase === "passing") return seen ? `${who} passes ${action.text}` : `${who} passes a card`;
  return seen ? `${who} plays ${action.text}` : `${who} plays a card`;
}

function renderFrame() {
  const data = view.data;
  const frame = data.frames[view.step];
  const seatView = Number($("view-seat").value);
  const bottom = seatView >= 0 ? seatView : 2 % data.players;
  const at = positions(bottom, data.players);
  const state = { ...frame, seat_names: data.seat_names, side_names: data.side_names, partnerships: data.partnerships, seat: bottom,
                  agents: {}, thinking: null, players: data.players, last_trick: null,
                  hands: data.hands.slice(0, frame.action ? frame.hand_number - 1 : frame.hand_number) };
  for (const where of ["top", "left", "right", "bottom"]) $(`ipos-${where}`).replaceChildren();
  for (let s = 0; s < data.players; s++) {
    const box = $(`ipos-${at[s]}`);
    box.className = `seat-box pos-${at[s]} ${frame.to_act === s ? "to-act" : ""}`;
    // a seat sees its own hand once it has looked (before a blind nil decision it has not)
    const visible = seatView < 0 || (seatView === s && !(frame.looked && !frame.looked[s]));
    box.replaceChildren(...seatLines(state, s, null),
      el("div", { class: "mini-hand" }, visible ? frame.hands[s].map((c) =>
        cardNode(c, `small ${frame.action && frame.action.id === c.id && frame.to_act === s ? "winner" : ""}`))
        : `${frame.hands[s].length} cards${seatView === s ? " face down" : ""}`));
  }
  renderCenter($("icenter"), state, at);
  $("step").value = view.step;
  $("step-label").textContent = `action ${view.step} of ${data.frames.length - 1} · hand ${frame.hand_number} · ${frame.phase.replaceAll("_", " ")}`;
  $("next-action").textContent = frame.action
    ? `Next: ${nextActionText(frame, data.seat_names, seatView)}`
    : `Final position${typeof data.winner === "number" && data.winner >= 0 ? ` · winner: ${winnerText(data.winner, data)}` : ""}`;
  $("iscoreboard").replaceChildren(scoreTable(state));
  $("analysis").replaceChildren();
}

function go(step) {
  if (!view.data) return;
  view.step = Math.max(0, Math.min(view.data.frames.length - 1, step));
  renderFrame();
}

async function analyse() {
  if (!view.data) return;
  const frame = view.data.frames[view.step];
  if (!frame.action) { say($("inspect-message"), "The final position has no decision to analyse.", "warn"); return; }
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
    const lines = [el("div", {}, `${view.data.seat_names[result.seat]} to act; ${result.agent} would play `,
                      el("b", {}, result.choice.text), `; the record has ${result.recorded.text}.`,
                      result.value !== null && result.value !== undefined ? ` Value estimate ${result.value.toFixed(1)} points.` : "")];
    for (const a of result.legal) {
      const p = result.probabilities ? result.probabilities[String(a.id)] : undefined;
      const q = result.candidate_values ? result.candidate_values[String(a.id)] : undefined;
      if (p === undefined && q === undefined) continue;
      const width = p !== undefined ? Math.round(100 * p) : 0;
      lines.push(el("div", { class: `bar ${a.id === result.choice.id ? "chosen" : ""}` },
        el("span", {}, a.text), el("div", {}, el("div", { class: "fill", style: `width:${width}%` })),
        el("span", {}, p !== undefined ? `${(100 * p).toFixed(1)}%` : `${q >= 0 ? "+" : ""}${q.toFixed(2)}`)));
    }
    if (result.candidate_values) lines.push(el("div", { class: "or" }, `search: mean play-out value of each candidate over ${result.worlds} worlds (points)`));
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
  $("open-record").addEventListener("click", () => openRecordFile($("record-list").value));
  $("upload").addEventListener("change", (e) => e.target.files[0] && uploadRecord(e.target.files[0]));
  $("first").addEventListener("click", () => go(0));
  $("prev").addEventListener("click", () => go(view.step - 1));
  $("next").addEventListener("click", () => go(view.step + 1));
  $("last").addEventListener("click", () => go(Infinity));
  $("step").addEventListener("input", (e) => go(Number(e.target.value)));
  $("view-seat").addEventListener("change", renderFrame);
  $("record-index").addEventListener("change", (e) => {
    const index = Number(e.target.value);
    if (view.source && view.source.name) openRecordFile(view.source.name, index);
    else if (view.source && view.source.file) uploadRecord(view.source.file, index);
  });
  $("analyse").addEventListener("click", analyse);
  document.addEventListener("keydown", (e) => {
    if ($("inspect").classList.contains("hidden") || e.target.tagName === "INPUT") return;
    if (e.key === "ArrowRight") go(view.step + 1);
    if (e.key === "ArrowLeft") go(view.step - 1);
  });
  loadOptions().then(resumeGame).catch((error) => say($("message"), error.message, "error"));
});
