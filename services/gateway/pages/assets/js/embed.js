// What a platform's own site gets when it shows a page in a frame (its origins are the page's
// `frame-ancestors`, SPADES_FRAME_ORIGINS): the page's theme from `?theme=dark` (or `light`),
// and, from the table, a message to the parent window on each turn and at the game's end:
//   {source: "spades", type: "turn", game_id, version, hand_number, phase, seat, seats}
//   {source: "spades", type: "game_over", game_id, version, winners, scores}
// `seat` is the seat on turn (null when none is, as in a pass: `seats` lists whoever owes a
// move). They carry what a watcher sees, nothing of a hidden hand.

const THEMES = ["light", "dark"];

/** Draw the page in the theme its address asks for (`?theme=dark`); any other is ignored. */
export function applyTheme() {
  const asked = new URLSearchParams(location.search).get("theme");
  if (THEMES.includes(asked)) document.documentElement.dataset.theme = asked;
}

/** The origin of the page that frames this one, where the browser says (Chromium, WebKit);
 * "*" elsewhere, which `frame-ancestors` already limits to the platform's own sites. */
function parentOrigin() {
  const ancestors = location.ancestorOrigins;
  return ancestors && ancestors.length ? ancestors[0] : "*";
}

const told = { turn: null, over: false };

/** Tell the framing page about a new state: a turn that changed, the game's end (once). */
export function tellParent(state) {
  if (window.parent === window) return;
  const post = (message) => window.parent.postMessage({ source: "spades", game_id: state.game_id, version: state.version, ...message }, parentOrigin());
  if (state.status === "finished") {
    if (!told.over) post({ type: "game_over", winners: state.winners, scores: state.scores });
    told.over = true;
    return;
  }
  if (state.status !== "playing") return;
  const seats = state.turn !== null ? [state.turn] : state.passes_due || [];
  const turn = `${state.hand_number}:${state.phase}:${state.turn}:${seats.join(",")}:${state.tricks.reduce((a, b) => a + b, 0)}`;
  if (turn === told.turn) return;
  told.turn = turn;
  post({ type: "turn", hand_number: state.hand_number, phase: state.phase, seat: state.turn, seats });
}

applyTheme();
