// The table: /play/{game_id}#token=... for a seat, /watch/{game_id} for anyone who may read it
// (/watch/{game_id}#token=... with a watch link's token, for a private game).
// The state comes from the event stream's `state` event and, after each event, from the API
// (the seat's view, with its `legal` actions, or the public state); nothing is decided here.
import { act, follow, fragmentValue, get, pathId, Refusal, serverOffsetMs } from "./api.js";
import { bidWords, cardFace, cardWords, groupWords, sortHand, suitGroup } from "./cards.js";
import { byId, h, replaceChildren } from "./dom.js";
import { tellParent } from "./embed.js";
import { countdownWords, eventWords, phaseWords, refusalWords, turnVerb } from "./words.js";

const gameId = pathId();
const playing = location.pathname.startsWith("/play/");
const token = fragmentValue("token");

const page = {
  state: null,
  trickSoFar: [], // the current trick as the events told it: [{seat, card}]
  lastTrick: null, // {cards: [{seat, card}], winner}
  showLastTrick: false,
  selected: [], // cards chosen for a pass or a discard
  sending: false,
  summary: null, // {event, lines} of the hand just scored
  refreshing: false,
  refreshAgain: false,
  clockTimer: null,
  // Moves the service made for a seat whose clock ran out, in the hand being played:
  // "bid:SEAT" and "play:SEAT:CARD" (a card played is public; a bid is too).
  byService: new Map(), // key -> the version of the move
  service: { seat: null }, // the seat the service is acting for, from a `timed_out` to its move
  following: null, // the event stream, until the game is over
};

const LOG_LINES = 40;
const LAST_TRICK_WINDOW = 30; // events: enough to hold the last trick of any table size

function name(seat) {
  const info = page.state && page.state.seats[seat];
  const player = info && info.player ? info.player : `seat ${seat}`;
  return playing && page.state && page.state.seat === seat ? `${player} (you)` : player;
}

function unitName(unit) {
  return page.state.units[unit].map((seat) => name(seat)).join(" & ");
}

/** The replay of a finished hand; a seat's token goes along in the fragment (never sent), so
 * that a game only its seats may read can be replayed by them too. */
function replayHref(hand) {
  const fragment = token ? `#token=${encodeURIComponent(token)}` : "";
  return `/replay/${encodeURIComponent(gameId)}?hand=${hand}${fragment}`;
}

function unitOf(seat) {
  return page.state.units.findIndex((seats) => seats.includes(seat));
}

// --------------------------------------------------------------------------- the state

async function refresh() {
  if (page.refreshing) {
    page.refreshAgain = true;
    return;
  }
  page.refreshing = true;
  try {
    do {
      page.refreshAgain = false;
      const path = `/v1/games/${encodeURIComponent(gameId)}${playing ? "/view" : ""}`;
      const state = await get(path, token);
      if (!page.state || state.version >= page.state.version) setState(state);
    } while (page.refreshAgain);
  } catch (error) {
    if (error instanceof Refusal) showRefusal(error);
    else throw error;
  } finally {
    page.refreshing = false;
  }
}

function setState(state) {
  const before = page.state;
  page.state = state;
  if (!before || before.phase !== state.phase || before.hand_number !== state.hand_number) {
    page.selected = [];
  }
  page.selected = page.selected.filter((card) => (state.hand || []).includes(card));
  render();
  tellParent(state);
  if (state.status === "finished") endFollowing();
}

/** A finished game has nothing more to say: stop listening, and say so. */
function endFollowing() {
  if (page.following) page.following.stop();
  page.following = null;
  onStatus("over");
}

/** What happened just before the page opened: the log's first lines, and the last trick. */
async function loadRecent(version) {
  const after = Math.max(0, version - LAST_TRICK_WINDOW);
  const recent = await get(`/v1/games/${encodeURIComponent(gameId)}/events?after=${after}&limit=${LAST_TRICK_WINDOW}`, token);
  const played = [];
  const service = { seat: null };
  for (const record of recent.events) {
    if (record.version > version) break;
    trackTrick(record.event, played);
    const line = eventWords(record.event, name);
    if (line) log(line, record.version, trackService(record.event, service, record.version));
  }
  render();
}

/** Keep the trick being played and the last one won, from the events. */
function trackTrick(event, played = page.trickSoFar) {
  if (event.type === "hand_dealt") {
    played.length = 0;
    page.lastTrick = null;
  } else if (event.type === "card_played") {
    played.push({ seat: event.seat, card: event.card });
  } else if (event.type === "trick_won") {
    const players = page.state ? page.state.seats.length : 4;
    page.lastTrick = { cards: played.slice(-players), winner: event.seat, trick: event.trick };
    played.length = 0;
  }
}

const MOVES = ["bid_placed", "card_played", "cards_passed", "cards_discarded", "card_drawn", "hand_looked"];

/** Whether `event` is a move the service made for a seat whose clock ran out: the moves of
 * that seat after its `timed_out`, in the same commit (the tracker forgets the seat at the
 * move that ends its turn, at another seat's move, or when the seat is back). */
function trackService(event, tracker, version) {
  if (event.type === "hand_dealt") {
    for (const [key, at] of page.byService) if (at < version) page.byService.delete(key);
  }
  if (event.type === "timed_out") {
    tracker.seat = event.seat;
    return false;
  }
  if (event.type === "seat_returned" || event.type === "game_ended") tracker.seat = null;
  if (!MOVES.includes(event.type)) return false;
  if (event.seat !== tracker.seat) {
    tracker.seat = null;
    return false;
  }
  if (event.type === "bid_placed") page.byService.set(`bid:${event.seat}`, version);
  if (event.type === "card_played") page.byService.set(`play:${event.seat}:${event.card}`, version);
  const turnEnds = event.type !== "hand_looked" && !(event.type === "card_drawn" && !event.kept);
  if (turnEnds) tracker.seat = null;
  return true;
}

// --------------------------------------------------------------------------- events

function onEvent({ version, type, event }) {
  if (type === "clock") {
    onClock(event);
    return;
  }
  trackTrick(event);
  const byService = trackService(event, page.service, version);
  const line = eventWords(event, name);
  if (line) log(line, version, byService);
  if (event.type === "hand_scored") loadSummary(event, version);
  refresh();
}

/** The clock after a commit (a clocked game's stream sends one after each): the banks, who
 * is away and the deadlines, drawn at once; the commit is over, so is any move made for a seat. */
function onClock(clock) {
  page.service.seat = null;
  if (!page.state || !clock) return;
  page.state = { ...page.state, clock };
  render();
}

/** Add a line to the log, newest first, each event once whichever way it came; a move the
 * service made for a seat whose time ran out says so. */
function log(text, version, byService = false) {
  const list = byId("log");
  const lines = [...list.children];
  if (lines.some((line) => Number(line.dataset.version) === version)) return;
  const older = lines.find((line) => Number(line.dataset.version) < version);
  const line = byService
    ? h("li", { class: "by-service", dataset: { version, timedOut: true } }, text, " ", h("span", { class: "badge service-badge" }, "timed out: played by the service"))
    : h("li", { dataset: { version } }, text);
  list.insertBefore(line, older || null);
  while (list.children.length > LOG_LINES) list.lastElementChild.remove();
}

async function loadSummary(event, version) {
  page.summary = { event, lines: null };
  renderSummary();
  try {
    const record = await get(
      `/v1/games/${encodeURIComponent(gameId)}/hands/${event.hand}?min_version=${version}`,
      token,
    );
    page.summary = { event, lines: record.score_lines || [], record };
  } catch (error) {
    page.summary = { event, lines: [], failed: error instanceof Refusal ? refusalWords(error) : String(error) };
  }
  renderSummary();
}

// --------------------------------------------------------------------------- acting

async function send(action) {
  if (page.sending) return;
  page.sending = true;
  hideRefusal();
  render();
  try {
    await act(gameId, token, action);
    page.selected = [];
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    showRefusal(error);
  } finally {
    page.sending = false;
    render();
  }
  await refresh();
}

function showRefusal(refusal) {
  const box = byId("refusal");
  replaceChildren(box, h("p", {}, h("strong", {}, "Refused: "), refusalWords(refusal)));
  box.dataset.code = refusal.code;
  box.hidden = false;
}

function hideRefusal() {
  byId("refusal").hidden = true;
}

// --------------------------------------------------------------------------- drawing

function render() {
  const state = page.state;
  if (!state) return;
  // What a test (or a person's script) may wait for: the version drawn, and where the game is.
  document.body.dataset.version = String(state.version);
  document.body.dataset.status = state.status;
  document.body.dataset.phase = state.phase || "";
  document.title = `Spades ${state.game_id}${playing ? ` · ${name(state.seat)}` : ""}`;
  replaceChildren(
    byId("title"),
    `${playing ? "Table" : "Watching"} · ${state.rules.preset} · `,
    state.status === "waiting" ? "waiting for players" : `hand ${state.hand_number}`,
    state.phase && state.status === "playing" ? ` · ${phaseWords(state.phase)}` : "",
  );
  renderTurn();
  renderTurnClock();
  renderScores();
  renderSeats();
  renderTrick();
  renderLastTrick();
  renderTableCards();
  if (playing) renderHand();
  renderSummary();
  renderClockTicks();
}

function renderTurn() {
  const state = page.state;
  const box = byId("turn");
  box.dataset.turn = state.turn === null ? "" : String(state.turn);
  if (state.status === "waiting") {
    const seated = state.seats.filter((s) => s.player).length;
    replaceChildren(box, `Waiting for players: ${seated} of ${state.seats.length} seated.`);
  } else if (state.status === "finished") {
    const winners = state.winners.map(unitName).join(" and ");
    replaceChildren(box, h("strong", {}, `Game over. ${winners || "Nobody"} won.`));
  } else if (playing && (state.turn === state.seat || (state.phase === "pass" && state.passes_due.includes(state.seat)))) {
    replaceChildren(box, h("strong", { class: "yours" }, `Your turn: ${turnVerb(state.phase)}.`));
  } else if (state.phase === "pass" && state.passes_due.length) {
    replaceChildren(box, `Waiting for ${state.passes_due.map(name).join(" and ")} to pass.`);
  } else if (state.turn !== null) {
    replaceChildren(box, `${name(state.turn)} to ${turnVerb(state.phase)}.`);
  } else {
    replaceChildren(box, "");
  }
}

function renderScores() {
  const state = page.state;
  const rows = state.units.map((seats, unit) =>
    h(
      "tr",
      { class: state.winners.includes(unit) ? "winner" : null },
      h("th", { scope: "row" }, unitName(unit)),
      h("td", { dataset: { score: unit } }, String(state.scores[unit])),
      h("td", {}, String(state.bags[unit])),
      h("td", {}, String(seats.reduce((sum, seat) => sum + (state.tricks[seat] || 0), 0))),
    ),
  );
  const finished = state.status === "finished" ? state.hand_number : state.hand_number - 1;
  const replays = [];
  for (let hand = 1; hand <= finished; hand += 1) {
    replays.push(h("a", { href: replayHref(hand) }, `hand ${hand}`));
  }
  replaceChildren(
    byId("scores"),
    h(
      "table",
      { class: "scores" },
      h("caption", {}, `Game to ${state.rules.target}${state.rules.max_hands ? ` or ${state.rules.max_hands} hand(s)` : ""}`),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, state.rules.partnerships ? "Team" : "Player"),
        h("th", { scope: "col" }, "Score"), h("th", { scope: "col" }, "Bags"), h("th", { scope: "col" }, "Tricks"))),
      h("tbody", {}, rows),
    ),
    replays.length ? h("p", { class: "replays" }, "Replay a finished hand: ", replays.flatMap((link, i) => (i ? [" · ", link] : [link]))) : null,
  );
}

/** Seats in table order, the reader's own last (at the bottom), the others clockwise. */
function seatOrder() {
  const state = page.state;
  const count = state.seats.length;
  const bottom = playing ? state.seat : 0;
  const order = [];
  for (let k = 1; k <= count; k += 1) order.push((bottom + k) % count);
  return order;
}

function renderSeats() {
  const state = page.state;
  const order = seatOrder();
  const seats = order.map((seat, index) => {
    const turn = state.turn === seat && state.status === "playing";
    const bid = state.bids[seat];
    // Once the game is over its last hand's bids and tricks are gone: the seat's side's score is
    // what is left to say.
    const facts = state.status === "finished" ? [
      h("span", { class: "fact" }, "final score ", h("strong", { dataset: { seatScore: seat } }, String(state.scores[unitOf(seat)]))),
      state.winners.includes(unitOf(seat)) ? h("span", { class: "badge" }, "won") : null,
    ] : [
      h("span", { class: "fact" }, "bid ", h("strong", { dataset: { seatBid: seat } }, bidWords(bid)),
        bid !== null && bid !== undefined && page.byService.has(`bid:${seat}`)
          ? h("span", { class: "service-note", dataset: { timedOut: true } }, " (timed out: bid by the service)") : null),
      h("span", { class: "fact" }, "won ", h("strong", {}, String(state.tricks[seat] || 0))),
    ];
    if (state.dealer === seat) facts.push(h("span", { class: "badge" }, "dealer"));
    if (turn) facts.push(h("span", { class: "badge turn-badge" }, `to ${turnVerb(state.phase)}`));
    const clock = seatClock(seat);
    if (clock) facts.push(clock);
    const away = seatClockOf(seat)?.away === true;
    return h(
      "div",
      {
        class: ["seat", `at-${index + 1}-of-${order.length}`, turn && "on-turn", playing && seat === state.seat && "mine", away && "away"],
        dataset: { seat, away: away || null },
        "aria-current": turn ? "true" : null,
      },
      h("p", { class: "who" }, name(seat), h("span", { class: "seat-number" }, ` seat ${seat}, unit ${unitOf(seat)}`)),
      h("p", { class: "facts" }, facts),
    );
  });
  const box = byId("seats");
  box.dataset.players = String(order.length);
  replaceChildren(box, seats);
}

function renderTrick() {
  const state = page.state;
  const cards = state.current_trick;
  const box = byId("trick");
  if (state.status === "finished") {
    const winners = state.winners.map(unitName).join(" and ");
    replaceChildren(box, h("p", { class: "final" }, `The game is over: ${winners || "nobody"} won, ${state.scores.join(" to ")}.`));
    return;
  }
  if (state.status !== "playing" || state.phase !== "play") {
    replaceChildren(box, h("p", { class: "quiet" }, state.status === "playing" ? `The ${phaseWords(state.phase)}.` : "Waiting for every seat to be taken."));
    return;
  }
  if (!cards.length) {
    const leader = state.turn === null ? "" : `${name(state.turn)} leads.`;
    replaceChildren(box, h("p", { class: "quiet" }, `Trick ${trickNumber()}: no card yet. ${leader}`));
    return;
  }
  replaceChildren(
    box,
    h("p", { class: "trick-caption" }, `Trick ${trickNumber()}, led by ${name(cards[0].seat)}`),
    h("ul", { class: "played", "aria-label": "cards in this trick" },
      cards.map((played, index) =>
        h("li", { dataset: { seat: played.seat, timedOut: servicePlayed(played) || null } }, cardFace(played.card),
          h("span", { class: "by" }, index === 0 ? `${name(played.seat)} led` : name(played.seat)),
          servicePlayed(played) ? h("span", { class: "service-note" }, "timed out: played by the service") : null))),
  );
}

function servicePlayed(played) {
  return page.byService.has(`play:${played.seat}:${played.card}`);
}

function trickNumber() {
  return page.state.tricks.reduce((sum, won) => sum + won, 0) + 1;
}

function renderLastTrick() {
  const button = byId("last-trick-button");
  const box = byId("last-trick");
  const last = page.lastTrick;
  button.parentElement.hidden = !last;
  button.textContent = page.showLastTrick && last ? "Hide last trick" : "Show last trick";
  button.setAttribute("aria-expanded", String(Boolean(page.showLastTrick && last)));
  box.hidden = !(page.showLastTrick && last);
  if (!last) return;
  replaceChildren(
    box,
    h("p", {}, `Last trick${last.trick ? ` (${last.trick})` : ""}: ${name(last.winner)} won it`, last.cards.length ? `, ${name(last.cards[0].seat)} led` : "", "."),
    h("ul", { class: "played" }, last.cards.map((played) =>
      h("li", { class: played.seat === last.winner ? "winning" : null, dataset: { timedOut: servicePlayed(played) || null } }, cardFace(played.card),
        h("span", { class: "by" }, name(played.seat)),
        servicePlayed(played) ? h("span", { class: "service-note" }, "timed out: played by the service") : null))),
  );
}

function renderTableCards() {
  const state = page.state;
  const box = byId("table-cards");
  if (!state.discards || !state.discards.length) {
    replaceChildren(box);
    return;
  }
  replaceChildren(box, h("p", {}, "Discarded face up in the draw:"), h("div", { class: "cards" }, state.discards.map((card) => cardFace(card))));
}

function legalOf(type) {
  return (page.state.legal || []).filter((action) => action.type === type);
}

function renderHand() {
  const state = page.state;
  byId("hand-panel").hidden = false;
  const handBox = byId("hand");
  const passing = legalOf("pass")[0] || legalOf("discard")[0] || null;
  const playable = new Set(legalOf("play").map((action) => action.card));
  if (state.hand === null) {
    const words = {
      waiting: "The cards are dealt when every seat is taken.",
      finished: "The game is over.",
    }[state.status] || "Your cards are face down: you have not looked at them.";
    replaceChildren(handBox, h("p", { class: "quiet" }, words));
  } else {
    const cards = sortHand(state.hand, state.rules);
    const groups = [];
    let current = null;
    cards.forEach((card, index) => {
      const group = suitGroup(card, state.rules);
      if (!current || current.group !== group) {
        current = { group, cards: [] };
        groups.push(current);
      }
      const copy = cards.slice(0, index).filter((c) => c === card).length;
      if (passing) {
        const chosen = chosenCopies(card) > copy;
        current.cards.push(cardFace(card, { onclick: () => toggle(card, copy), legal: true, pressed: chosen }));
      } else if (playable.size) {
        const legal = playable.has(card);
        current.cards.push(cardFace(card, { onclick: play, legal, disabled: !legal || page.sending, note: legal ? "playable" : "not playable now" }));
      } else {
        current.cards.push(cardFace(card)); // not this seat's turn: nothing to press
      }
    });
    replaceChildren(handBox, groups.map((group) =>
      h("div", { class: "suit", role: "group", "aria-label": groupWords(group.group) }, group.cards)));
  }
  renderControls(passing);
}

function chosenCopies(card) {
  return page.selected.filter((c) => c === card).length;
}

function toggle(card, copy) {
  if (chosenCopies(card) > copy) {
    page.selected.splice(page.selected.lastIndexOf(card), 1);
  } else {
    page.selected.push(card);
  }
  render();
}

function play(card) {
  send({ type: "play", card });
}

function renderControls(passing) {
  const state = page.state;
  const controls = [];
  const looks = legalOf("look");
  const bids = legalOf("bid");
  const draws = legalOf("draw");
  if (legalOf("back").length) {
    controls.push(h("div", { class: "away-notice", dataset: { awayNotice: true } },
      h("p", {}, "You are away: the service moves for you at once on each of your turns."),
      h("button", { type: "button", class: "action", dataset: { action: "back", legal: true }, onclick: () => send({ type: "back" }) }, "I'm back")));
  }
  if (bids.length) controls.push(bidControls(bids));
  if (looks.length) {
    controls.push(h("button", { type: "button", class: "action", dataset: { action: "look", legal: true }, onclick: () => send({ type: "look" }) }, "Look at my cards"));
  }
  if (draws.length) {
    const drawn = state.drawn_card;
    controls.push(h("div", { class: "draw" },
      h("p", {}, "You drew ", drawn ? cardFace(drawn) : "a card", ". Keep it, or discard it and take the next card unseen."),
      draws.map((action) => h("button", {
        type: "button", class: "action", dataset: { action: action.keep ? "keep" : "discard", legal: true },
        onclick: () => send({ type: "draw", keep: action.keep }),
      }, action.keep ? `Keep the ${drawn ? cardWords(drawn) : "card"}` : "Discard it, take the next"))));
  }
  if (passing) {
    const verb = passing.type === "pass" ? "Pass" : "Discard";
    const to = passing.type === "pass" ? ` to ${name(partnerOf(state.seat))}` : " face down";
    const ready = page.selected.length === passing.count;
    controls.push(h("div", { class: "pass" },
      h("p", {}, `Choose ${passing.count} card(s) to ${verb.toLowerCase()}${to}: ${page.selected.length} chosen.`),
      h("button", {
        type: "button", class: "action", dataset: { action: passing.type, legal: ready || null },
        "aria-disabled": ready && !page.sending ? null : "true",
        onclick: (event) => {
          if (event.currentTarget.getAttribute("aria-disabled") === "true") return;
          send({ type: passing.type, cards: [...page.selected] });
        },
      }, `${verb} ${passing.count} card(s)`)));
  }
  replaceChildren(byId("controls"), controls);
}

function partnerOf(seat) {
  const unit = page.state.units[unitOf(seat)];
  return unit.find((other) => other !== seat) ?? seat;
}

function bidControls(bids) {
  const numbers = bids.map((action) => action.bid).filter((bid) => typeof bid === "number");
  const most = Math.max(0, ...numbers);
  const buttons = [];
  const button = (bid, legal) => h("button", {
    type: "button",
    class: ["bid", legal ? "legal" : "illegal"],
    dataset: { bid: String(bid), legal: legal || null },
    "aria-disabled": legal && !page.sending ? null : "true",
    title: legal ? `bid ${bidWords(bid)}` : `bid ${bidWords(bid)}: not allowed`,
    onclick: (event) => {
      if (event.currentTarget.getAttribute("aria-disabled") === "true") return;
      send({ type: "bid", bid });
    },
  }, bidWords(bid));
  for (let n = 0; n <= most; n += 1) buttons.push(button(n, numbers.includes(n)));
  const words = bids.map((action) => action.bid).filter((bid) => typeof bid === "string");
  return h("div", { class: "bids", role: "group", "aria-label": "your bid" },
    h("p", {}, "Your bid:"),
    h("div", { class: "bid-row" }, buttons),
    words.length ? h("div", { class: "bid-row" }, words.map((bid) => button(bid, true))) : null);
}

function renderSummary() {
  const box = byId("summary");
  const summary = page.summary;
  if (!summary || !page.state) {
    box.hidden = true;
    return;
  }
  const { event } = summary;
  box.hidden = false;
  const units = page.state.units.map((seats, unit) => {
    const before = event.scores[unit] - event.points[unit];
    const lines = (summary.lines || []).filter((line) => line.unit === unit);
    return h("section", { class: "unit-score", dataset: { unit } },
      h("h3", {}, unitName(unit)),
      h("p", {}, seats.map((seat) => `${name(seat)} bid ${bidWords(event.bids[seat])}, took ${event.tricks[seat]}`).join("; "), "."),
      lines.length ? h("ul", { class: "score-lines" }, lines.map((line) =>
        h("li", { dataset: { rule: line.rule } }, h("code", {}, line.rule), ` ${line.points > 0 ? "+" : ""}${line.points}: ${line.text}`))) : null,
      h("p", { class: "arithmetic" }, `${before} ${event.points[unit] >= 0 ? "+" : "−"} ${Math.abs(event.points[unit])} = `, h("strong", {}, String(event.scores[unit])), `; bags ${event.bags[unit]}`));
  });
  replaceChildren(box,
    h("h2", { id: "summary-title" }, `Hand ${event.hand} scored`),
    summary.lines === null ? h("p", { class: "quiet" }, "Reading the score lines…") : null,
    summary.failed ? h("p", {}, summary.failed) : null,
    units,
    h("p", {}, h("a", { href: replayHref(event.hand), dataset: { replay: event.hand } }, `Replay hand ${event.hand} step by step`)),
    h("button", { type: "button", onclick: () => { page.summary = null; renderSummary(); } }, "Close the summary"));
}

// --------------------------------------------------------------------------- the clock

/** The seat's part of the clock (`{seat, bank_s, away, timeouts, deadline}`), or null. */
function seatClockOf(seat) {
  const clock = page.state && page.state.clock;
  if (!clock || !Array.isArray(clock.seats)) return null;
  return clock.seats.find((entry) => entry && entry.seat === seat) || null;
}

/** A deadline (RFC 3339) as milliseconds since the epoch, or null. */
function deadlineMs(deadline) {
  if (typeof deadline !== "string") return null;
  const parsed = Date.parse(deadline);
  return Number.isNaN(parsed) ? null : parsed;
}

/** A ticking countdown to `deadline`; `bank` (seconds) says when the bank is being used. */
function countdown(deadline, bank, label) {
  const at = deadlineMs(deadline);
  if (at === null) return null;
  return h("span", {
    class: "countdown",
    role: "timer",
    "aria-label": label,
    dataset: { deadline: String(at), bankS: String(bank || 0) },
  }, countdownWords(at, bank || 0, serverNow()));
}

/** A seat's clock on the table: its bank, "away", timeouts in a row, and its own countdown
 * while it is on the clock (every seat that owes a pass is, at once). */
function seatClock(seat) {
  const held = seatClockOf(seat);
  if (!held) return null;
  const parts = [h("span", { class: "bank", dataset: { bank: seat } }, `bank ${Math.ceil(held.bank_s)} s`)];
  if (held.away) parts.push(h("span", { class: "badge away-badge", title: "the service moves for this seat at once" }, "away"));
  if (held.timeouts > 0) parts.push(h("span", { class: "timeouts" }, `${held.timeouts} timeout${held.timeouts === 1 ? "" : "s"}`));
  const ticking = page.state.status === "playing" ? countdown(held.deadline, held.bank_s, `time left for ${name(seat)}`) : null;
  if (ticking) parts.push(ticking);
  return h("span", { class: "clock", dataset: { clock: seat } }, parts.flatMap((p, i) => (i ? [" · ", p] : [p])));
}

/** Under the turn: how long the seat (or seats) on the clock have, ticking each second. */
function renderTurnClock() {
  const box = byId("turn-clock");
  const clock = page.state.clock;
  const due = clock && page.state.status === "playing"
    ? clock.seats.filter((held) => deadlineMs(held.deadline) !== null) : [];
  box.hidden = due.length === 0;
  box.dataset.deadline = clock && clock.deadline ? String(deadlineMs(clock.deadline)) : "";
  if (!due.length) {
    replaceChildren(box);
    return;
  }
  replaceChildren(box, "Clock: ", due.flatMap((held, i) => {
    const who = name(held.seat);
    const part = [h("span", { class: "clock-seat", dataset: { clockSeat: held.seat } }, `${who} `, countdown(held.deadline, held.bank_s, `time left for ${who}`))];
    if (held.away) part.push(" (away: the service moves at once)");
    return i ? [" · ", ...part] : part;
  }), ` (${clock.turn_s} s a turn, then the bank; ${clock.on_timeout === "forfeit" ? "the unit that runs out loses" : "at 0 the service moves"})`);
}

/** Now on the server's clock, as near as this device can tell (see serverOffsetMs). */
function serverNow() {
  return Date.now() + serverOffsetMs();
}

function tick() {
  const now = serverNow();
  for (const element of document.querySelectorAll(".countdown[data-deadline]")) {
    element.textContent = countdownWords(Number(element.dataset.deadline), Number(element.dataset.bankS), now);
  }
}

function renderClockTicks() {
  const ticking = Boolean(page.state.clock) && page.state.status === "playing";
  if (ticking && !page.clockTimer) {
    page.clockTimer = setInterval(tick, 1000);
  } else if (!ticking && page.clockTimer) {
    clearInterval(page.clockTimer);
    page.clockTimer = null;
  }
}

// --------------------------------------------------------------------------- start

function onStatus(status, detail) {
  const box = byId("connection");
  box.dataset.status = status;
  const words = { live: "live", reconnecting: "reconnecting…", closed: "not connected", over: "game over" }[status];
  box.textContent = detail ? `${words} (${detail})` : words;
}

function start() {
  byId("last-trick-button").addEventListener("click", () => {
    page.showLastTrick = !page.showLastTrick;
    renderLastTrick();
  });
  if (playing && !token) {
    onStatus("closed", "no seat token");
    replaceChildren(byId("turn"), "This page needs the seat's token after # in its address: /play/GAME#token=…");
    return;
  }
  let first = true;
  page.following = follow(gameId, token, {
    onState(state) {
      setState(state);
      if (first) {
        first = false;
        loadRecent(state.version).catch(() => {});
        if (state.status === "finished" && state.hand_number > 0) {
          get(`/v1/games/${encodeURIComponent(gameId)}/events?after=${Math.max(0, state.version - 3)}`, token)
            .then((events) => {
              const scored = events.events.filter((r) => r.event.type === "hand_scored").pop();
              if (scored) loadSummary(scored.event, scored.version);
            })
            .catch(() => {});
        }
      }
    },
    onEvent,
    onStatus(status, detail, refusal) {
      if (page.state && page.state.status === "finished") return; // over: nothing to follow
      onStatus(status, detail);
      if (refusal) showRefusal(refusal);
    },
  });
}

start();
