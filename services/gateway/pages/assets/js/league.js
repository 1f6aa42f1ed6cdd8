// A league: /leagues/{league_id}. Its rules and players, its knockout's bracket, every round's
// tables with links to their games, and the standings with ratings and the director's
// adjustments and voided tables, from the league endpoints of the API. A private
// league's watch link carries its token after # (never sent to a server); the tables' links
// carry it on.
import { fragmentValue, get, pathId, Refusal } from "./api.js";
import { byId, h, replaceChildren } from "./dom.js";
import { refusalWords } from "./words.js";

const leagueId = pathId();
const base = `/v1/leagues/${encodeURIComponent(leagueId)}`;
const token = fragmentValue("token");
const fragment = token ? `#token=${encodeURIComponent(token)}` : "";
let voided = new Set();

function about(league) {
  const rules = league.rules;
  return [
    h("p", {}, `${league.players.length} players, ${rules.preset} rules to ${rules.target}${rules.max_hands ? ` or ${rules.max_hands} hand(s)` : ""}, `,
      league.knockout && league.knockout.after_round === 0 ? "a knockout, " : `${league.pairing === "swiss" ? "Swiss pairing" : "round robin"}${league.knockout ? " then a knockout" : ""}, `,
      `${league.rounds_scheduled} of ${league.rounds === null ? "no fixed number of" : league.rounds} round(s) scheduled, `,
      `${league.rounds_finished} finished${league.finished ? ": the league is over" : ""}.`),
    h("p", { class: "quiet" }, `Players: ${league.players.join(", ")}.`),
    league.withdrawn.length ? h("p", { class: "quiet" }, `Withdrawn: ${league.withdrawn.join(", ")}.`) : null,
    league.clock ? h("p", { class: "quiet" }, `Every table on a clock: ${league.clock.turn_s} s a turn, ${league.clock.bank_s} s in the bank, ${league.clock.on_timeout === "forfeit" ? "a timeout forfeits" : "a timeout is played by the service"}.`) : null,
    h("p", {}, h("a", { id: "integrity", href: `/leagues/${encodeURIComponent(leagueId)}/integrity${fragment}` }, "Integrity report"), " (collusion signals per pair of players: for the league's platform)."),
  ];
}

function standings(table) {
  if (!table.players.length) return h("p", { class: "quiet" }, "No player yet.");
  // On a phone the table scrolls within its box (which the keyboard can reach), not the page.
  // The caption is said as the table's name, and shown above the box (inside, it would be as
  // wide as the table and scroll out of sight).
  const ranking = `Counting ${table.version} finished game(s). Ranked by wins (a bye counts one), then points, then fewest forfeits, then rating.`;
  return [h("p", { class: "quiet", "aria-hidden": "true" }, ranking), h("div", { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Standings table" }, h("table", { class: "standings" },
    h("caption", { class: "visually-hidden" }, ranking),
    h("thead", {}, h("tr", {}, ["Rank", "Player", "Wins", "Points", "Games", "Byes", "Forfeits", "Rating"].map((title) => h("th", { scope: "col" }, title)))),
    h("tbody", {}, table.players.map((row) =>
      h("tr", { dataset: { player: row.player } },
        h("td", {}, String(row.rank)),
        h("th", { scope: "row" }, row.withdrawn ? `${row.player} (withdrawn)` : row.player),
        h("td", {}, String(row.wins)),
        h("td", {}, row.adjusted ? `${row.points} (adjusted ${row.adjusted > 0 ? "+" : ""}${row.adjusted})` : String(row.points)),
        h("td", {}, String(row.games)),
        h("td", {}, String(row.byes)),
        h("td", {}, String(row.forfeits)),
        h("td", { title: `mu ${row.rating.mu.toFixed(2)}, sigma ${row.rating.sigma.toFixed(2)}` },
          `${row.rating.ordinal.toFixed(1)} (μ ${row.rating.mu.toFixed(1)} ± ${row.rating.sigma.toFixed(1)})`))))))];
}

function director(table) {
  const parts = [];
  if (table.adjustments.length) {
    parts.push(h("h3", {}, "Adjusted scores"), h("ul", { class: "list", id: "adjustments" }, table.adjustments.map((made) =>
      h("li", { dataset: { adjustment: made.number } },
        h("strong", {}, `${made.points > 0 ? "+" : ""}${made.points} to ${made.player}`),
        h("span", {}, made.round ? `round ${made.round}` : "the league"),
        h("span", {}, `why: ${made.reason}`)))));
  }
  if (table.voided.length) {
    parts.push(h("h3", {}, "Voided tables"), h("ul", { class: "list", id: "voided" }, table.voided.map((void_) =>
      h("li", { dataset: { voided: void_.game_id } },
        h("strong", {}, `Round ${void_.round}, table ${void_.table}`),
        h("span", {}, "counts for no one"),
        h("span", {}, `why: ${void_.reason}`)))));
  }
  return parts;
}

function bracket(knockout) {
  const length = knockout.deals ? `${knockout.deals} deal(s)` : `to ${knockout.target} points`;
  const field = knockout.top ? `the top ${knockout.top}` : "every player";
  const by = knockout.seeding === "ratings" ? "the organiser's ratings" : "the standings";
  const intro = h("p", {}, `A knockout after ${knockout.after_round} round(s): ${field}, seeded by ${by}; a match is ${length}, a tie on top plays on a hand at a time.`);
  if (!knockout.entrants.length) return [intro, h("p", { class: "quiet" }, "Seeded when its first round starts.")];
  const seedOf = (player) => knockout.entrants.indexOf(player) + 1;
  return [
    intro,
    knockout.champion ? h("p", { id: "champion" }, h("strong", {}, `Champion: ${knockout.champion}`)) : null,
    h("ol", { class: "bracket" }, knockout.rounds.map((played) =>
      h("li", { class: "bracket-round", dataset: { round: played.round } },
        h("h3", {}, `Round ${played.round}`),
        h("ul", { class: "list" }, played.matches.map((match) =>
          h("li", { dataset: { match: match.match, winner: match.winner || "" } },
            match.players.map((player) => h(player === match.winner ? "strong" : "span", {},
              `${seedOf(player)}. ${player}${player === match.winner ? " (goes on)" : ""}`)),
            match.players.length === 1 ? h("span", { class: "quiet" }, "a bye") : null,
            match.game_id ? h("a", { href: `/watch/${encodeURIComponent(match.game_id)}${fragment}` }, "the match") : null)))))),
  ];
}

function round(played) {
  return h("section", { class: "round", dataset: { round: played.round } },
    h("h3", {}, `Round ${played.round}${played.finished ? " · finished" : ""}`),
    h("ul", { class: "list" }, played.tables.map((table) => {
      const game = encodeURIComponent(table.game_id);
      const status = table.status || "starting";
      const scores = table.scores ? `scores ${table.scores.join(" : ")}` : "";
      return h("li", { dataset: { game: table.game_id, status } },
        h("strong", {}, `Table ${table.table}`),
        voided.has(table.game_id) ? h("span", { class: "voided-mark" }, "voided") : null,
        h("span", {}, table.players.map((player, seat) =>
          table.sitting[seat] === player ? player : `${player} (played by ${table.sitting[seat]})`).join(", ")),
        h("span", {}, status, scores ? `, ${scores}` : ""),
        h("a", { href: `/watch/${game}${fragment}` }, status === "finished" ? "the table" : "watch"),
        status === "finished" ? h("a", { href: `/replay/${game}?hand=1${fragment}` }, "replay") : null);
    })),
    played.byes.length ? h("p", { class: "quiet" }, `Sitting out: ${played.byes.join(", ")}.`) : null);
}

async function load() {
  const problem = byId("problem");
  problem.hidden = true;
  try {
    const league = await get(base, token);
    document.title = `Spades league ${league.name}`;
    replaceChildren(byId("title"), `League · ${league.name}`);
    replaceChildren(byId("about"), about(league));
    const [table, ...rounds] = await Promise.all([
      get(`${base}/standings`, token),
      ...Array.from({ length: league.rounds_scheduled }, (_, k) => get(`${base}/rounds/${k + 1}`, token)),
    ]);
    voided = new Set(table.voided.map((void_) => void_.game_id));
    replaceChildren(byId("standings"), standings(table));
    replaceChildren(byId("director"), director(table));
    byId("knockout-panel").hidden = !league.knockout;
    if (league.knockout) replaceChildren(byId("knockout"), bracket(league.knockout));
    replaceChildren(byId("rounds"), rounds.length ? rounds.reverse().map(round) : h("p", { class: "quiet" }, "No round yet."));
  } catch (error) {
    replaceChildren(problem, h("p", {}, error instanceof Refusal ? refusalWords(error) : String(error)));
    problem.hidden = false;
  }
}

byId("refresh").addEventListener("click", load);
load();
