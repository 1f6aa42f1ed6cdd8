// A finished hand, step by step: /replay/{game_id}?hand=N. Everything comes from the hand's
// record (GET /v1/games/{id}/hands/{n}, every card revealed once the hand is over), the game's
// public state (names, units) and the replay audit (GET /v1/games/{id}/audit).
import { fromBase64, leafHash, openNote, parseCheckpoint, verifierKey, verifyInclusion } from "./transparency.js";
import { fragmentValue, get, isWatchLink, pathId, Refusal } from "./api.js";
import { bidWords, cardFace, cardWords, sortHand } from "./cards.js";
import { byId, h, replaceChildren } from "./dom.js";
import { refusalWords } from "./words.js";

const gameId = pathId();
const handNumber = Number(new URLSearchParams(location.search).get("hand") || "1");
const token = fragmentValue("token"); // a seat's or a watch link's, when the game is private

const page = { game: null, record: null, steps: [], at: 0 };

function name(seat) {
  const info = page.game && page.game.seats[seat];
  return info && info.player ? info.player : `seat ${seat}`;
}

function unitName(unit) {
  return page.game.units[unit].map(name).join(" & ");
}

// --------------------------------------------------------------------------- steps

/** The hand as a list of steps: the deal, each bid, the passes, each card, the score. Each step
 * knows the hands still held, the trick on the table and the tricks won so far. */
function buildSteps(record, players) {
  const steps = [];
  const held = record.deal.hands.map((cards) => [...cards]);
  const won = new Array(players).fill(0);
  const bids = new Array(players).fill(null);
  const snapshot = (kind, words, extra = {}) =>
    steps.push({ kind, words, held: held.map((cards) => [...cards]), won: [...won], bids: [...bids], ...extra });

  snapshot("deal", `The deal: ${name(record.dealer)} dealt hand ${record.hand}.`);
  if (record.bids.some((bid) => bid !== null)) {
    for (let k = 1; k <= players; k += 1) {
      const seat = (record.dealer + k) % players;
      bids[seat] = record.bids[seat];
      snapshot("bid", `${name(seat)} bid ${bidWords(record.bids[seat])}.`, { seat });
    }
  }
  if (record.passes.length) {
    for (const pass of record.passes) {
      for (const card of pass.cards) take(held[pass.from], card);
      held[pass.to].push(...pass.cards);
    }
    const words = record.passes.map((pass) => `${name(pass.from)} passed ${pass.cards.map(cardWords).join(", ")} to ${name(pass.to)}`);
    snapshot("pass", `${words.join("; ")}.`);
  }
  record.tricks.forEach((trick, index) => {
    trick.cards.forEach((played, position) => {
      take(held[played.seat], played.card);
      const complete = position === trick.cards.length - 1;
      if (complete) won[trick.winner] += 1;
      const led = position === 0 ? ` (${name(played.seat)} leads)` : "";
      const outcome = complete ? ` ${name(trick.winner)} wins trick ${index + 1}.` : "";
      snapshot("card", `Trick ${index + 1}: ${name(played.seat)} plays the ${cardWords(played.card)}${led}.${outcome}`, {
        trick: index,
        shown: trick.cards.slice(0, position + 1),
        complete,
      });
    });
  });
  snapshot("score", `Hand ${record.hand} scored: ${record.points.map((p, unit) => `${unitName(unit)} ${p > 0 ? "+" : ""}${p}`).join(", ")}.`);
  return steps;
}

function take(cards, card) {
  const index = cards.indexOf(card);
  if (index >= 0) cards.splice(index, 1);
}

/** The step where trick `index` is complete. */
function stepOfTrick(index) {
  return page.steps.findIndex((step) => step.kind === "card" && step.trick === index && step.complete);
}

function go(at) {
  page.at = Math.max(0, Math.min(page.steps.length - 1, at));
  render();
}

// --------------------------------------------------------------------------- drawing

function render() {
  const step = page.steps[page.at];
  const record = page.record;
  replaceChildren(byId("step"), `Step ${page.at + 1} of ${page.steps.length}: ${step.words}`);
  byId("step").dataset.step = String(page.at);
  byId("step").dataset.kind = step.kind;
  byId("back").disabled = page.at === 0;
  byId("first").disabled = page.at === 0;
  byId("forward").disabled = page.at === page.steps.length - 1;
  byId("last").disabled = page.at === page.steps.length - 1;
  const jump = byId("jump");
  jump.value = step.trick === undefined ? "" : String(step.trick);

  const seats = record.deal.hands.map((_, seat) =>
    h("section", { class: "panel", dataset: { seat } },
      h("h3", {}, `${name(seat)}${seat === record.dealer ? " (dealer)" : ""}`),
      h("p", {}, `bid ${bidWords(step.bids[seat])}, won ${step.won[seat]}`),
      h("div", { class: "cards", "aria-label": `${name(seat)}'s cards` }, sortHand(step.held[seat], page.game.rules).map((card) => cardFace(card)))));
  const table = [];
  if (step.shown) {
    table.push(h("p", {}, `On the table, trick ${step.trick + 1}, led by ${name(step.shown[0].seat)}:`));
    table.push(h("ul", { class: "played" }, step.shown.map((played) =>
      h("li", { class: step.complete && played.seat === record.tricks[step.trick].winner ? "winning" : null }, cardFace(played.card), h("span", { class: "by" }, name(played.seat))))));
  }
  if (step.kind === "deal") table.push(dealFacts(record));
  replaceChildren(byId("situation"), h("div", { class: "hands-grid" }, seats), table);

  for (const item of byId("tricks").children) {
    const current = step.trick !== undefined && Number(item.dataset.trick) === step.trick + 1;
    if (current) item.setAttribute("aria-current", "step");
    else item.removeAttribute("aria-current");
  }
}

function dealFacts(record) {
  const facts = [];
  if (record.draws.length) {
    facts.push(h("p", {}, `The draw: ${record.draws.map((d) => `${name(d.seat)} ${d.kept ? "kept" : "discarded"} the ${cardWords(d.card)}`).join("; ")}.`));
  }
  const discards = record.discards || record.dealer_discard;
  if (Array.isArray(discards) && discards.length) {
    facts.push(h("p", {}, `${name(record.dealer)} discarded face down: `, discards.map((card) => cardFace(card))));
  }
  facts.push(h("p", { class: "quiet" }, `Commitment ${record.deal.commitment || "—"}; seed ${record.deal.seed || "—"}.`));
  return facts;
}

function renderTricks() {
  const record = page.record;
  replaceChildren(byId("tricks"), record.tricks.map((trick, index) =>
    h("li", { dataset: { trick: index + 1 } },
      h("p", {}, h("strong", {}, `Trick ${index + 1}`), `: ${name(trick.leader)} led, ${name(trick.winner)} won. `,
        h("button", { type: "button", dataset: { step: `trick-${index}` }, onclick: () => go(stepOfTrick(index)) }, `Show trick ${index + 1}`)),
      h("ul", { class: "played" }, trick.cards.map((played) =>
        h("li", { class: played.seat === trick.winner ? "winning" : null }, cardFace(played.card), h("span", { class: "by" }, name(played.seat))))))));
  const jump = byId("jump");
  replaceChildren(jump, h("option", { value: "" }, "—"), record.tricks.map((_, index) => h("option", { value: String(index) }, `trick ${index + 1}`)));
}

function renderScore(audit) {
  const record = page.record;
  const lines = record.score_lines || [];
  const handAudit = audit && audit.hands.find((entry) => entry.hand === record.hand);
  const units = page.game.units.map((seats, unit) => {
    const before = record.scores[unit] - record.points[unit];
    return h("section", { class: "unit-score", dataset: { unit } },
      h("h3", {}, unitName(unit)),
      h("p", {}, seats.map((seat) => `${name(seat)} bid ${bidWords(record.bids[seat])}, took ${record.tricks_won[seat]}`).join("; "), "."),
      h("table", {},
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Rule"), h("th", { scope: "col" }, "Points"), h("th", { scope: "col" }, "Why"))),
        h("tbody", {}, lines.filter((line) => line.unit === unit).map((line) =>
          h("tr", { dataset: { rule: line.rule } }, h("td", {}, h("code", {}, line.rule)), h("td", {}, `${line.points > 0 ? "+" : ""}${line.points}`), h("td", {}, line.text))))),
      h("p", { class: "arithmetic" }, `${before} ${record.points[unit] >= 0 ? "+" : "−"} ${Math.abs(record.points[unit])} = `, h("strong", {}, String(record.scores[unit])), `; bags ${record.bags[unit]}`),
      disagreement(lines.filter((line) => line.unit === unit), record.points[unit]));
  });
  const replayed = handAudit && handAudit.arithmetic && handAudit.arithmetic.length
    ? h("details", {}, h("summary", {}, "The audit's own arithmetic, by replay"), h("pre", {}, handAudit.arithmetic.join("\n")))
    : null;
  replaceChildren(byId("score"), units, replayed);
}

/** When the rules' lines do not add up to the points recorded, say so: that is the dispute. */
function disagreement(lines, recorded) {
  const reckoned = lines.reduce((sum, line) => sum + line.points, 0);
  if (!lines.length || reckoned === recorded) return null;
  return h("p", { class: "mismatch", dataset: { mismatch: "" } },
    `The rules' lines add up to ${reckoned}; the record says ${recorded}.`);
}

function renderAudit(audit) {
  const record = page.record;
  const hand = audit.hands.find((entry) => entry.hand === record.hand);
  const handOk = Boolean(audit.chain && hand && hand.deal_verified && hand.replayed && hand.score_matches && !hand.problems.length);
  const first = (hand && hand.problems[0]) || (!audit.chain && audit.first_problem) || null;
  const facts = [
    ["the hash chain of the game's events", audit.chain],
    ["the deal against its commitment", hand && hand.deal_verified],
    ["every event replayed through the rules", hand && hand.replayed],
    ["the score against the rules' own", hand && hand.score_matches],
  ];
  replaceChildren(
    byId("audit"),
    h("p", { class: "verdict", dataset: { audit: handOk ? "ok" : "failed" } },
      handOk ? `Hand ${record.hand} audits clean.` : `Hand ${record.hand} fails the audit.`),
    h("ul", {}, facts.map(([what, ok]) => h("li", {}, `${ok ? "✔" : "✘"} ${what}: ${ok ? "holds" : "fails"}`))),
    first ? h("div", { class: "first-problem", dataset: { version: first.version } },
      h("p", {}, h("strong", {}, `First failing event: version ${first.version}`), ` (${first.check}${first.rule ? `, ${first.rule}` : ""})`),
      h("p", {}, first.detail),
      first.arithmetic && first.arithmetic.length ? h("pre", {}, first.arithmetic.join("\n")) : null) : null,
    h("p", { class: "quiet" }, `The whole game: ${audit.ok ? "clean" : "not clean"}, ${audit.events} events.`),
  );
}

// --------------------------------------------------------------------------- the receipt

const decoder = new TextDecoder();

/** Check the hand's receipt here, in the browser: the checkpoint's signature with the key the
 * log publishes (GET /v1/log), the entry's bytes at their leaf of that tree (RFC 9162
 * inclusion), and the entry saying this game, this hand, and this deal's commitment and seed.
 * Throws with the reason when anything does not hold. */
async function checkedReceipt(record) {
  const receipt = record.receipt;
  const logs = await get("/v1/log", token);
  const published = logs.logs.find((log) => log.partition === receipt.partition);
  let text = receipt.checkpoint;
  let signedBy = [];
  if (receipt.signed) {
    if (!published || !published.verifier) throw new Error("the log publishes no key to check its signature");
    const opened = await openNote(receipt.checkpoint, [await verifierKey(published.verifier)]);
    text = opened.text;
    signedBy = opened.signedBy;
  }
  const checkpoint = parseCheckpoint(text);
  if (checkpoint.origin !== receipt.origin || checkpoint.size !== BigInt(receipt.tree_size)) {
    throw new Error("the checkpoint is not of the receipt's log and size");
  }
  const entry = fromBase64(receipt.entry_bytes);
  const said = JSON.parse(decoder.decode(entry));
  const deal = record.deal || {};
  if (said.game_id !== gameId || said.hand !== record.hand) {
    throw new Error(`the log's entry is of game ${said.game_id} hand ${said.hand}, not this hand`);
  }
  if (said.commitment !== (deal.commitment ?? null) || said.seed !== (deal.seed ?? null)) {
    throw new Error("the log's entry names another deal commitment or seed than this hand's");
  }
  if (JSON.stringify(said.points) !== JSON.stringify(record.points) || JSON.stringify(said.scores) !== JSON.stringify(record.scores)) {
    throw new Error("the log's entry scores the hand otherwise than this record");
  }
  const proof = receipt.inclusion_proof.map(fromBase64);
  await verifyInclusion(await leafHash(entry), receipt.leaf_index, receipt.tree_size, proof, checkpoint.root);
  return { checkpoint, signedBy };
}

async function renderReceipt(record) {
  const box = byId("receipt");
  if (!record.receipt) {
    replaceChildren(box, h("p", { class: "quiet", dataset: { receipt: "none" } },
      "The audit log does not hold this hand yet (it follows the game a moment behind): reload to check it."));
    return;
  }
  try {
    const { checkpoint, signedBy } = await checkedReceipt(record);
    const receipt = record.receipt;
    replaceChildren(box,
      h("p", { class: "verdict", dataset: { receipt: "verified" } },
        `Hand ${record.hand} is leaf ${receipt.leaf_index} of the log ${checkpoint.origin}, in its tree of ${receipt.tree_size} leaves.`),
      h("ul", {},
        h("li", {}, signedBy.length ? `✔ its checkpoint is signed by ${signedBy.join(", ")}` : "✘ its checkpoint is not signed: the log has no key"),
        h("li", {}, "✔ the hand's entry is in that tree (its inclusion proof, checked here)"),
        h("li", {}, "✔ the entry names this hand's deal commitment, its seed and its score")),
      h("p", { class: "quiet" }, "Checked in this browser against the key the log publishes; compare it with the one you keep; spades verify checks kept receipts offline."));
  } catch (error) {
    replaceChildren(box, h("p", { class: "mismatch", dataset: { receipt: "refused" } },
      `The receipt does not hold: ${error instanceof Refusal ? refusalWords(error) : error.message}`));
  }
}

function showProblem(error) {
  const box = byId("problem");
  replaceChildren(box, h("p", {}, error instanceof Refusal ? refusalWords(error) : String(error)));
  box.hidden = false;
}

// --------------------------------------------------------------------------- start

async function start() {
  const base = `/v1/games/${encodeURIComponent(gameId)}`;
  const fragment = token ? `#token=${encodeURIComponent(token)}` : "";
  byId("watch-link").href = token && !isWatchLink(token)
    ? `/play/${encodeURIComponent(gameId)}${fragment}`
    : `/watch/${encodeURIComponent(gameId)}${fragment}`;
  replaceChildren(byId("title"), `Replay · hand ${handNumber}`);
  document.title = `Spades replay ${gameId} hand ${handNumber}`;
  byId("first").addEventListener("click", () => go(0));
  byId("back").addEventListener("click", () => go(page.at - 1));
  byId("forward").addEventListener("click", () => go(page.at + 1));
  byId("last").addEventListener("click", () => go(page.steps.length - 1));
  byId("jump").addEventListener("change", (event) => {
    if (event.target.value !== "") go(stepOfTrick(Number(event.target.value)));
  });
  document.addEventListener("keydown", (event) => {
    if (event.target instanceof HTMLSelectElement || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "ArrowRight") go(page.at + 1);
    else if (event.key === "ArrowLeft") go(page.at - 1);
  });
  try {
    const [game, record] = await Promise.all([get(base, token), get(`${base}/hands/${handNumber}`, token)]);
    page.game = game;
    page.record = record;
  } catch (error) {
    showProblem(error);
    replaceChildren(byId("audit"));
    return;
  }
  renderReceipt(page.record);
  page.steps = buildSteps(page.record, page.game.seats.length);
  renderTricks();
  renderScore(null);
  go(0);
  const finished = page.game.status === "finished" ? page.game.hand_number : page.game.hand_number - 1;
  const links = [];
  for (let hand = 1; hand <= finished; hand += 1) {
    links.push(hand === handNumber
      ? h("strong", { "aria-current": "page" }, `hand ${hand}`)
      : h("a", { href: `/replay/${encodeURIComponent(gameId)}?hand=${hand}${location.hash}` }, `hand ${hand}`));
  }
  replaceChildren(byId("hands"), links.flatMap((link, i) => (i ? [" · ", link] : [link])));
  try {
    const audit = await get(`${base}/audit`, token);
    renderAudit(audit);
    renderScore(audit);
  } catch (error) {
    replaceChildren(byId("audit"), h("p", {}, "The audit could not be read: ", error instanceof Refusal ? refusalWords(error) : String(error)));
  }
}

start();
