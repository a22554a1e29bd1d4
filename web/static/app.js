// The Spades web table: the Play tab (a person at the table with agents) and the Inspect tab
// (step through a game record, ask an agent about any position). Plain JavaScript, no library.
"use strict";

const $ = (id) => document.getElementById(id);
const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
const RED = { H: true, D: true };

async function api(method, path, body) {
  const response = await fetch(path, {
    method, headers: body === undefined ? {} : { "Content-Type": "application/json" },
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

function bidText(bid, blind) {
  if (bid === null || bid === undefined) return "no bid yet";
  if (bid === 0) return blind ? "blind nil" : "nil";
  return `bid ${bid}`;
}

function scoreTable(state) {
  const sides = state.partnerships ? [[0, 2], [1, 3]] : state.seat_names.map((_, s) => [s]);
  const label = (side) => side.map((s) => state.seat_names[s]).join(" + ");
  const head = el("tr", {}, el("th", {}, "Hand"), ...sides.map((side) => el("th", {}, label(side))));
  const rows = (state.hands || []).map((hand, i) => el("tr", {}, el("td", {}, `${i + 1}`),
    ...sides.map((_, k) => el("td", {}, `${hand.score_change ? signed(hand.score_change[k]) : ""} → ${hand.scores ? hand.scores[k] : ""}`))));
  const now = el("tr", {}, el("td", {}, el("b", {}, state.target_score ? `Score (bags), game to ${state.target_score}` : "Score (bags)")),
    ...sides.map((_, k) => el("td", {}, el("b", {}, `${state.scores[k]} (${state.bags[k]})`))));
  const contract = el("tr", {}, el("td", {}, "This hand: bid / won"),
    ...sides.map((side) => {
      const bids = side.map((s) => state.bids[s]);
      const bid = bids.every((b) => b !== null) ? bids.reduce((a, b) => a + b, 0) : "…";
      const won = side.reduce((a, s) => a + state.tricks_won[s], 0);
      return el("td", {}, `${bid} / ${won}`);
    }));
  return el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows, contract, now));
}

function signed(x) { return x > 0 ? `+${x}` : `${x}`; }

// ------------------------------------------------------------------------------------- Play
const play = { id: null, state: null, polling: false };

async function loadOptions() {
  const options = await api("GET", "/api/options");
  const rules = $("rules");
  rules.replaceChildren(...options.rules.map((name) => el("option", { value: name }, name)));
  $("agent-names").replaceChildren(...options.agents.flatMap((name) =>
    name === "search" ? [el("option", { value: "search" }), el("option", { value: "search:budget=strong" })] :
    name === "neural" ? [el("option", { value: "neural" }), el("option", { value: "neural:checkpoint=" })] :
    [el("option", { value: name })]));
}

async function startGame(event) {
  event.preventDefault();
  const seat = Number($("seat").value);
  const players = 4;              // every preset seats four; the server checks the seats
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
    play.state = await api("POST", "/api/games", request);
    play.id = play.state.id;
    say($("message"), "");
    renderPlay();
    poll();
  } catch (error) {
    say($("message"), error.message, "error");
  }
}

async function poll() {
  if (play.polling) return;
  play.polling = true;
  try {
    while (play.id && play.state && !play.state.over && !play.state.error) {
      const id = play.id;
      const waiting = play.state.to_act !== play.state.seat;
      if (!waiting) break;
      const next = await api("GET", `/api/games/${id}?since=${play.state.version}&wait=5`);
      if (id !== play.id) return;
      play.state = next;
      renderPlay();
    }
  } catch (error) {
    say($("message"), error.message, "error");
  } finally {
    play.polling = false;
  }
}

async function act(action) {
  try {
    play.state = await api("POST", `/api/games/${play.id}/action`, { action });
    say($("message"), "");
    renderPlay();
    poll();
  } catch (error) {
    say($("message"), error.message, "warn");
  }
}

function seatBox(state, seat, where, prefix = "pos") {
  const box = $(`${prefix}-${where}`);
  const mine = seat === state.seat;
  const agent = mine ? "you" : state.agents[String(seat)];
  box.className = `seat-box pos-${where} ${state.to_act === seat ? "to-act" : ""}`;
  box.replaceChildren(
    el("div", { class: `name ${state.thinking === seat ? "thinking" : ""}` }, state.seat_names[seat],
       state.dealer === seat ? " (dealer)" : ""),
    el("div", { class: "agent" }, agent),
    el("div", {}, `${bidText(state.bids[seat], state.blind[seat])} · ${state.tricks_won[seat]} won`));
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
  // The hand: legal cards are buttons; an illegal one says why when clicked.
  $("hand").replaceChildren(...(state.hand_hidden
    ? [el("span", { class: "or" }, `${state.hand_size} cards face down: decide on blind nil before you look`)]
    : state.hand.map((card) => {
      const legal = myTurn && legalIds.has(card.id);
      const reason = state.illegal_reasons[String(card.id)];
      return cardNode(card, legal ? "legal" : (myTurn ? "illegal" : ""), "button", {
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
  }
  if (state.error) say($("message"), state.error, "error");
  if (state.over) {
    const sides = state.partnerships ? ["North + South", "East + West"] : state.seat_names;
    const winner = state.winner === null || state.winner === undefined || state.winner < 0 ? "nobody" : sides[state.winner];
    controls.push(el("span", { class: "or" }, `Game over: ${winner} won. `),
      el("a", { href: `/api/games/${state.id}/record`, download: `spades-${state.id}.json`, id: "download" }, "Download the record"),
      el("button", { type: "button", onclick: () => { showTab("inspect"); openRecordFile(`web-${state.id}.json`); } }, "Inspect it"));
  } else {
    controls.push(el("a", { href: `/api/games/${state.id}/record`, download: `spades-${state.id}.json`, class: "or" }, "record so far"));
  }
  $("controls").replaceChildren(...controls);
  $("controls").dataset.version = String(state.version);    // which state the page shows (tests wait on it)
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

function renderFrame() {
  const data = view.data;
  const frame = data.frames[view.step];
  const seatView = Number($("view-seat").value);
  const bottom = seatView >= 0 ? seatView : 2 % data.players;
  const at = positions(bottom, data.players);
  const state = { ...frame, seat_names: data.seat_names, partnerships: data.partnerships, seat: bottom,
                  agents: {}, thinking: null, players: data.players, last_trick: null, hands: data.hands.slice(0, frame.hand_number - 1) };
  for (const where of ["top", "left", "right", "bottom"]) $(`ipos-${where}`).replaceChildren();
  for (let s = 0; s < data.players; s++) {
    const box = $(`ipos-${at[s]}`);
    box.className = `seat-box pos-${at[s]} ${frame.to_act === s ? "to-act" : ""}`;
    const visible = seatView < 0 || seatView === s;
    box.replaceChildren(
      el("div", { class: "name" }, data.seat_names[s], frame.dealer === s ? " (dealer)" : ""),
      el("div", {}, `${bidText(frame.bids[s], frame.blind[s])} · ${frame.tricks_won[s]} won`),
      el("div", { class: "mini-hand" }, visible ? frame.hands[s].map((c) =>
        cardNode(c, `small ${frame.action && frame.action.id === c.id && frame.to_act === s ? "winner" : ""}`))
        : `${frame.hands[s].length} cards`));
  }
  renderCenter($("icenter"), state, at);
  $("step").value = view.step;
  $("step-label").textContent = `action ${view.step} of ${data.frames.length - 1} · hand ${frame.hand_number} · ${frame.phase.replaceAll("_", " ")}`;
  $("next-action").textContent = frame.action
    ? `Next: ${data.seat_names[frame.to_act]} plays ${frame.action.text}${frame.action.kind === "bid" ? " (bid)" : ""}`
    : `Final position${data.winner !== null && data.winner !== undefined && data.winner >= 0 ? ` · winner: side ${data.winner}` : ""}`;
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
  loadOptions().catch((error) => say($("message"), error.message, "error"));
});
