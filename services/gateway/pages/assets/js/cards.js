// Cards as docs/rules.md writes them ("QH", "TS", "BJ"), in words and in order.
import { h } from "./dom.js";

const RANKS = "23456789TJQKA";
const RANK_WORDS = {
  2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
  T: "ten", J: "jack", Q: "queen", K: "king", A: "ace",
};
const RANK_SHOWN = { T: "10" };
const SUITS = {
  S: { word: "spades", symbol: "♠", colour: "black" },
  H: { word: "hearts", symbol: "♥", colour: "red" },
  C: { word: "clubs", symbol: "♣", colour: "black" },
  D: { word: "diamonds", symbol: "♦", colour: "red" },
};
const JOKERS = {
  BJ: { word: "big joker", shown: "Big ★" },
  LJ: { word: "little joker", shown: "Little ★" },
};
const SUIT_ORDER = ["trump", "H", "C", "D"];

/** "queen of hearts", "big joker". */
export function cardWords(card) {
  if (JOKERS[card]) return JOKERS[card].word;
  return `${RANK_WORDS[card[0]]} of ${SUITS[card[1]].word}`;
}

/** "Q♥", "10♠", "Big ★": the short label printed on a card. */
export function cardShown(card) {
  if (JOKERS[card]) return JOKERS[card].shown;
  return `${RANK_SHOWN[card[0]] || card[0]}${SUITS[card[1]].symbol}`;
}

export function cardColour(card) {
  return JOKERS[card] ? "joker" : SUITS[card[1]].colour;
}

/** The trumps from the top, as the rules' `trump_order` ranks them. */
function trumpRanking(rules) {
  const spades = [...RANKS].reverse().map((rank) => `${rank}S`);
  switch (rules && rules.trump_order) {
    case "jokers": return ["BJ", "LJ", ...spades];
    case "jokers_deuce": return ["BJ", "LJ", "2S", ...spades.filter((c) => c !== "2S")];
    case "jokers_deuces": return ["BJ", "LJ", "2D", "2S", ...spades.filter((c) => c !== "2S")];
    default: return spades;
  }
}

/** The suit a card follows as: "trump" for spades, jokers (and 2♦ when it is a spade). */
export function suitGroup(card, rules) {
  if (trumpRanking(rules).includes(card)) return "trump";
  return card[1];
}

/** Cards sorted by suit (trumps first, then hearts, clubs, diamonds), high to low. */
export function sortHand(cards, rules) {
  const trumps = trumpRanking(rules);
  const key = (card) => {
    const group = suitGroup(card, rules);
    const rank = group === "trump" ? trumps.indexOf(card) : 12 - RANKS.indexOf(card[0]);
    return SUIT_ORDER.indexOf(group) * 100 + rank;
  };
  return [...cards].sort((a, b) => key(a) - key(b));
}

export function groupWords(group) {
  return group === "trump" ? "spades (trumps)" : SUITS[group].word;
}

/** A card as a face: a span, or a button when `onclick` is given. Every card shown carries
 * `data-card`, and a visible text label as well as its name in words. */
export function cardFace(card, { onclick = null, legal = false, disabled = false, pressed = null, note = null } = {}) {
  const label = `${cardWords(card)}${note ? `, ${note}` : ""}`;
  const children = [
    h("span", { class: "rank", "aria-hidden": "true" }, cardShown(card)),
    h("span", { class: "visually-hidden" }, label),
  ];
  const classes = ["card", cardColour(card), legal && "legal", disabled && "illegal"];
  if (!onclick) {
    return h("span", { class: classes, dataset: { card }, title: label }, children);
  }
  return h(
    "button",
    {
      type: "button",
      class: classes,
      dataset: { card, legal: legal || null },
      title: label,
      "aria-disabled": disabled ? "true" : null,
      "aria-pressed": pressed === null ? null : String(pressed),
      onclick: (event) => {
        if (event.currentTarget.getAttribute("aria-disabled") === "true") return;
        onclick(card, event);
      },
    },
    children,
  );
}

/** A bid in words: 3, "nil", "blind nil", "blind 6". */
export function bidWords(bid) {
  if (bid === null || bid === undefined) return "—";
  if (bid === "nil") return "nil";
  if (bid === "blind_nil") return "blind nil";
  if (typeof bid === "string" && bid.startsWith("blind_")) return `blind ${bid.slice(6)}`;
  return String(bid);
}
