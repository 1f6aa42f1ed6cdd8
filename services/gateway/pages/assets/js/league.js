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
      league.format === "duplicate" ? `a duplicate event of ${league.boards_per_round} board(s) a round, ` :
      league.knockout && league.knockout.after_round === 0 ? "a knockout, " : `${league.pairing === "swiss" ? "Swiss pairing" : "round robin"}${league.knockout ? " then a knockout" : ""}, `,
      `${league.rounds_scheduled} of ${league.rounds === null ? "no fixed number of" : league.rounds} round(s) scheduled, `,
      `${league.rounds_finished} finished${league.finished ? ": the league is over" : ""}.`),
    h("p", { class: "quiet" }, `Players: ${league.players.join(", ")}.`),
    league.withdrawn.length ? h("p", { class: "quiet" }, `Withdrawn: ${league.withdrawn.join(", ")}.`) : null,
    league.clock ? h("p", { class: "quiet" }, `Every table on a clock: ${league.clock.turn_s} s a turn, ${league.clock.bank_s} s in the bank, ${league.clock.on_timeout === "forfeit" ? "a timeout forfeits" : "a timeout is played by the service"}.`) : null,
    h("p", {}, h("a", { id: "integrity", href: `/leagues/${encodeURIComponent(leagueId)}/integrity${fragment}` }, "Integrity report"), " (collusion signals per pair of players: for the league's platform)."),
  ];
}

function standings(table, duplicate) {
  if (!table.players.length) return h("p", { class: "quiet" }, "No player yet.");
  // On a phone the table scrolls within its box (which the keyboard can reach), not the page.
  // The caption is said as the table's name, and shown above the box (inside, it would be as
  // wide as the table and scroll out of sight).
  const ranking = duplicate
    ? `Counting the boards of every round all tables have finished. Ranked by percentage: matchpoints over tops (1 for each result of the same direction beaten on a board elsewhere, 1/2 for a tie).`
    : `Counting ${table.version} finished game(s). Ranked by wins (a bye counts one), then points, then fewest forfeits, then rating.`;
  const titles = duplicate
    ? ["Rank", "Player", "Percentage", "Matchpoints", "Boards", "Rating"]
    : ["Rank", "Player", "Wins", "Points", "Games", "Byes", "Forfeits", "Rating"];
  const cells = (row) => duplicate
    ? [
      h("td", {}, row.percentage === null ? "–" : `${row.percentage.toFixed(1)}%`),
      h("td", {}, `${row.matchpoints}${row.adjusted ? ` (adjusted ${row.adjusted > 0 ? "+" : ""}${row.adjusted})` : ""}`),
      h("td", {}, String(row.boards)),
    ]
    : [
      h("td", {}, String(row.wins)),
      h("td", {}, row.adjusted ? `${row.points} (adjusted ${row.adjusted > 0 ? "+" : ""}${row.adjusted})` : String(row.points)),
      h("td", {}, String(row.games)),
      h("td", {}, String(row.byes)),
      h("td", {}, String(row.forfeits)),
    ];
  return [h("p", { class: "quiet", "aria-hidden": "true" }, ranking), h("div", { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Standings table" }, h("table", { class: "standings" },
    h("caption", { class: "visually-hidden" }, ranking),
    h("thead", {}, h("tr", {}, titles.map((title) => h("th", { scope: "col" }, title)))),
    h("tbody", {}, table.players.map((row) =>
      h("tr", { dataset: { player: row.player } },
        h("td", {}, String(row.rank)),
        h("th", { scope: "row" }, row.withdrawn ? `${row.player} (withdrawn)` : row.player),
        ...cells(row),
        h("td", { title: `mu ${row.rating.mu.toFixed(2)}, sigma ${row.rating.sigma.toFixed(2)}` },
          `${row.rating.ordinal.toFixed(1)} (μ ${row.rating.mu.toFixed(1)} ± ${row.rating.sigma.toFixed(1)})`))))))];
}

function boards(answer, league) {
  const published = league.boards ? h("p", { class: "quiet" }, `${league.boards.commitments.length} boards committed to before the event (Merkle root ${league.boards.root.slice(0, 16)}…); each seed is revealed when every table has played its board.`) : null;
  if (!answer.boards.length) return [published, h("p", { class: "quiet" }, "No board is over at every table yet.")];
  return [published, ...answer.boards.map((board) => {
    const caption = `Board ${board.board} (round ${board.round}), played at ${board.played} table(s)`;
    return h("section", { class: "board", dataset: { board: board.board } },
      h("h3", {}, caption),
      h("div", { class: "table-scroll", tabindex: "0", role: "region", "aria-label": `Board ${board.board} across the tables` }, h("table", { class: "standings" },
        h("caption", { class: "visually-hidden" }, caption),
        h("thead", {}, h("tr", {}, ["Direction", "Players", "Points", "Delta", "Matchpoints", "Table"].map((title) => h("th", { scope: "col" }, title)))),
        h("tbody", {}, board.results.map((result) =>
          h("tr", { dataset: { game: result.game_id, direction: result.direction } },
            h("td", {}, String(result.direction + 1)),
            h("th", { scope: "row" }, result.players.join(" & ")),
            h("td", {}, String(result.points)),
            h("td", {}, `${result.delta > 0 ? "+" : ""}${result.delta}`),
            h("td", {}, `${result.matchpoints} of ${result.top}`),
            h("td", {}, h("a", { href: `/replay/${encodeURIComponent(result.game_id)}?hand=${result.hand}${fragment}` }, "replay"))))))));
  })];
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
        h("strong", {}, `Round ${void_.round}, table ${void_.table}${void_.board ? `, board ${void_.board}` : ""}`),
        h("span", {}, "counts for no one"),
        h("span", {}, `why: ${void_.reason}`)))));
  }
  return parts;
}

// The knockout's stated tie rule, as a director would read it out.
function tieRule(knockout) {
  if (knockout.tie_break === "higher_seed") return "a tie on top at its end goes to the better seed";
  if (knockout.tie_break === "extra_deal") {
    return `a tie on top at its end plays on, ${knockout.extra_deals} extra deal(s) at most, then goes to the better seed`;
  }
  return "a tie on top at its end plays on a hand at a time";
}

function bracket(knockout) {
  const length = knockout.deals ? `${knockout.deals} deal(s)` : `to ${knockout.target} points`;
  const field = knockout.top ? `the top ${knockout.top}` : "every player";
  const by = knockout.seeding === "ratings" ? "the organiser's ratings" : "the standings";
  const intro = h("p", {}, `A knockout after ${knockout.after_round} round(s): ${field}, seeded by ${by}; a match is ${length}; ${tieRule(knockout)}.`);
  if (!knockout.entrants.length) return [intro, h("p", { class: "quiet" }, "Seeded when its first round starts.")];
  const named = (side) => side.join(" & ");
  return [
    intro,
    knockout.champion ? h("p", { id: "champion" }, h("strong", {}, `Champion: ${named(knockout.champion)}`)) : null,
    h("ol", { class: "bracket" }, knockout.rounds.map((played) =>
      h("li", { class: "bracket-round", dataset: { round: played.round } },
        h("h3", {}, `Round ${played.round}`),
        h("ul", { class: "list" }, played.matches.map((match) =>
          h("li", { dataset: { match: match.match, winner: match.winner ? named(match.winner) : "" } },
            match.sides.map((side, index) => {
              const won = match.winner !== null && named(side) === named(match.winner);
              return h(won ? "strong" : "span", {}, `${match.seeds[index]}. ${named(side)}${won ? " (goes on)" : ""}`);
            }),
            match.sides.length === 1 ? h("span", { class: "quiet" }, "a bye") : null,
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
    replaceChildren(byId("standings"), standings(table, league.format === "duplicate"));
    replaceChildren(byId("director"), director(table));
    byId("knockout-panel").hidden = !league.knockout;
    if (league.knockout) replaceChildren(byId("knockout"), bracket(league.knockout));
    byId("boards-panel").hidden = league.format !== "duplicate";
    if (league.format === "duplicate") replaceChildren(byId("boards"), boards(await get(`${base}/boards`, token), league));
    replaceChildren(byId("rounds"), rounds.length ? rounds.reverse().map(round) : h("p", { class: "quiet" }, "No round yet."));
  } catch (error) {
    replaceChildren(problem, h("p", {}, error instanceof Refusal ? refusalWords(error) : String(error)));
    problem.hidden = false;
  }
}

byId("refresh").addEventListener("click", load);
load();
