// A league's integrity report: /leagues/{league_id}/integrity#token=KEY. Every pair's collusion
// signals from GET /v1/leagues/{id}/integrity, which answers the league's platform alone: its
// key comes in the fragment (never sent to a server) and is sent as `Authorization: Bearer`.
// A flagged signal lists its hands as links to their replays. The report holds no card.
import { fragmentValue, get, Refusal } from "./api.js";
import { byId, h, replaceChildren } from "./dom.js";
import { refusalWords } from "./words.js";

const leagueId = decodeURIComponent(location.pathname.split("/").filter(Boolean)[1] || "");
const base = `/v1/leagues/${encodeURIComponent(leagueId)}`;
const token = fragmentValue("token");
const fragment = token ? `#token=${encodeURIComponent(token)}` : "";

const SIGNALS = {
  sets: "sets (the first sets the second)",
  free_sets_declined: "free sets declined",
  bags_fed: "bags fed",
  nils_covered: "nils covered",
  shared_table_lift: "shared-table lift",
  co_seating: "co-seating",
};

function number(value) {
  return Number.isInteger(value) ? String(value) : value.toFixed(Math.abs(value) < 10 ? 3 : 1);
}

function chance(value) {
  return value < 0.001 ? value.toExponential(1) : value.toFixed(3);
}

function signalsTable(report) {
  if (!report.signals.length) return h("p", { class: "quiet" }, "No finished hand yet.");
  const flagged = report.signals.filter((signal) => signal.flagged).length;
  const summary = `${report.hands} finished hand(s); ${flagged} signal(s) flagged at a false discovery rate of ${report.fdr}. Flagged first, then by adjusted p.`;
  return [h("p", { class: "quiet", "aria-hidden": "true" }, summary), h("div", { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Signals table" }, h("table", { class: "standings" },
    h("caption", { class: "visually-hidden" }, summary),
    h("thead", {}, h("tr", {}, ["Signal", "Players", "Observed", "Expected", "Effect", "Count", "p", "Adjusted p", "Flagged"].map((title) => h("th", { scope: "col" }, title)))),
    h("tbody", {}, report.signals.map((signal) =>
      h("tr", { dataset: { signal: signal.signal, players: signal.players.join(" / "), flagged: signal.flagged } },
        h("td", {}, SIGNALS[signal.signal] || signal.signal),
        h("th", { scope: "row" }, signal.players.join(" / ")),
        h("td", {}, number(signal.observed)),
        h("td", {}, number(signal.expected)),
        h("td", {}, number(signal.effect)),
        h("td", {}, String(signal.count)),
        h("td", {}, chance(signal.p_value)),
        h("td", {}, chance(signal.q_value)),
        h("td", {}, signal.flagged ? "flagged" : ""))))))];
}

function evidence(report) {
  const flagged = report.signals.filter((signal) => signal.flagged);
  if (!flagged.length) return h("p", { class: "quiet" }, "Nothing is flagged.");
  return flagged.map((signal) => h("section", { class: "round", dataset: { evidence: signal.signal } },
    h("h3", {}, `${SIGNALS[signal.signal] || signal.signal}: ${signal.players.join(" / ")}`),
    h("ul", { class: "list" }, signal.evidence.map((where) =>
      h("li", {}, h("a", { href: `${where.replay}${fragment}` }, `game ${where.game_id}, hand ${where.hand}`))))));
}

async function load() {
  const problem = byId("problem");
  problem.hidden = true;
  replaceChildren(byId("back"), h("a", { href: `/leagues/${encodeURIComponent(leagueId)}${fragment}` }, "Back to the league"));
  try {
    const report = await get(`${base}/integrity`, token);
    replaceChildren(byId("title"), `League integrity · ${leagueId}`);
    replaceChildren(byId("signals"), signalsTable(report));
    replaceChildren(byId("flagged"), evidence(report));
  } catch (error) {
    replaceChildren(problem, h("p", {}, error instanceof Refusal ? refusalWords(error) : String(error)));
    problem.hidden = false;
  }
}

byId("refresh").addEventListener("click", load);
load();
