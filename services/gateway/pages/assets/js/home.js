// The front page: games being played and finished, their leagues, and a way in for a seat.
// With a platform's key after # (`/#token=KEY`, never sent to a server but as a bearer) it lists
// that platform's games, private ones too, and its links carry the key on to the table, the
// replays and the leagues.
import { fragmentValue, get, Refusal } from "./api.js";
import { byId, h, replaceChildren } from "./dom.js";
import { refusalWords } from "./words.js";

const SHOWN = 50;
const token = fragmentValue("token");
const fragment = token ? `#token=${encodeURIComponent(token)}` : "";

function gameItem(game) {
  const id = encodeURIComponent(game.game_id);
  const players = game.players.map((p) => p || "(free)").join(", ");
  const links = [h("a", { href: `/watch/${id}${fragment}` }, game.status === "finished" ? "the table" : "watch")];
  if (game.hands_played > 0) links.push(h("a", { href: `/replay/${id}?hand=${game.hands_played}${fragment}` }, `replay hand ${game.hands_played}`));
  return h("li", { dataset: { game: game.game_id } },
    h("strong", {}, game.preset),
    h("span", {}, players),
    h("span", { class: "quiet" }, `${game.hands_played} hand(s), scores ${game.scores.join(" : ")}`),
    links);
}

function fill(id, items, empty) {
  replaceChildren(byId(id), items.length ? items : h("li", { class: "quiet" }, empty));
}

async function load() {
  byId("platform-note").hidden = !token;
  try {
    const [playing, waiting, finished] = await Promise.all(
      ["playing", "waiting", "finished"].map((status) => get(`/v1/games?status=${status}&limit=${SHOWN}`, token)),
    );
    fill("playing", [...playing.games, ...waiting.games].map(gameItem), "No game is being played.");
    fill("finished", finished.games.map(gameItem), "No game has finished yet.");
    const leagueIds = [...new Set([...playing.games, ...waiting.games, ...finished.games].map((g) => g.league).filter(Boolean))];
    const leagues = await Promise.all(leagueIds.map((id) => get(`/v1/leagues/${encodeURIComponent(id)}`, token).catch(() => null)));
    fill("leagues", leagues.filter(Boolean).map((league) =>
      h("li", { dataset: { league: league.league_id } },
        h("a", { href: `/leagues/${encodeURIComponent(league.league_id)}${fragment}` }, league.name),
        h("span", { class: "quiet" }, `${league.players.length} players, ${league.rounds_scheduled} round(s)`))), "No league has a game yet.");
  } catch (error) {
    const box = byId("problem");
    replaceChildren(box, h("p", {}, error instanceof Refusal ? refusalWords(error) : String(error)));
    box.hidden = false;
  }
}

byId("seat-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = byId("seat-token").value.trim();
  const parts = token.split(".");
  if (parts.length < 7 || parts[0] !== "st2") {
    byId("seat-error").textContent = "That is not a seat token: it starts with st2. and names its game.";
    return;
  }
  location.assign(`/play/${encodeURIComponent(parts[1])}#token=${encodeURIComponent(token)}`);
});

load();
