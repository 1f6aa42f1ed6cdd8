// What the service says, in words for people: refusal codes, phases, events.
import { bidWords, cardWords } from "./cards.js";

const REFUSALS = {
  not_your_turn: "It is not your turn.",
  wrong_phase: "That does not belong to this part of the hand.",
  card_not_in_hand: "That card is not in your hand.",
  must_follow_suit: "You must follow the suit that was led.",
  spades_not_broken: "Spades have not been broken yet: lead another suit.",
  must_beat: "You must beat the card that is winning the trick.",
  wrong_opening_lead: "The opening lead must be the lowest club.",
  invalid_bid: "That bid is not allowed.",
  nil_not_allowed: "Nil is not allowed in this game.",
  blind_nil_not_allowed: "Blind nil is not allowed now.",
  blind_bid_not_allowed: "A blind bid is not allowed now.",
  invalid_pass: "That pass is not allowed.",
  invalid_discard: "That discard is not allowed.",
  game_over: "The game is over.",
  conflict: "The game moved on before your move arrived.",
  unauthorized: "This seat's token is not valid (it may have expired).",
  forbidden: "This token is for another game.",
  game_not_found: "There is no such game.",
  rate_limited: "Too many requests: wait a moment.",
  unavailable: "The server is busy: try again.",
  unreachable: "The server cannot be reached.",
  malformed: "The server could not read that move.",
};

/** "You must follow the suit that was led. (must_follow_suit: seat 2 holds hearts)". */
export function refusalWords(refusal) {
  const said = REFUSALS[refusal.code] || "The server refused that.";
  const detail = refusal.detail ? `: ${refusal.detail}` : "";
  return `${said} (${refusal.code}${detail})`;
}

const PHASES = { draw: "draw", discard: "dealer's discard", bid: "bidding", pass: "passing", play: "play" };

export function phaseWords(phase) {
  return PHASES[phase] || phase || "";
}

/** What the seat on turn does now, as a verb: "bid", "play", "pass", "draw", "discard". */
export function turnVerb(phase) {
  return { draw: "draw", discard: "discard", bid: "bid", pass: "pass", play: "play" }[phase] || "act";
}

/** One event as a line of the table's log, or null for one not worth a line. */
export function eventWords(event, name) {
  switch (event.type) {
    case "seat_taken": return `${event.player} sat down at seat ${event.seat}.`;
    case "hand_dealt": return `Hand ${event.hand} dealt by ${name(event.dealer)}.`;
    case "hand_looked": return `${name(event.seat)} looked at their cards.`;
    case "bid_placed": return `${name(event.seat)} bid ${bidWords(event.bid)}.`;
    case "card_drawn": return event.card
      ? `${name(event.seat)} ${event.kept ? "kept" : "discarded"} the ${cardWords(event.card)}.`
      : `${name(event.seat)} drew a card and ${event.kept ? "kept it" : "discarded it"}.`;
    case "cards_passed": return `${name(event.seat)} passed ${event.cards ? event.cards.length + " cards" : "cards"} to ${name(event.to)}.`;
    case "cards_discarded": return `${name(event.seat)} discarded face down.`;
    case "card_played": return `${name(event.seat)} played the ${cardWords(event.card)}.`;
    case "trick_won": return `${name(event.seat)} won trick ${event.trick}.`;
    case "hand_scored": return `Hand ${event.hand} scored: ${event.points.map((p) => (p > 0 ? `+${p}` : p)).join(", ")}.`;
    case "game_ended": return event.forfeited === null || event.forfeited === undefined
      ? "The game is over." : "The game is over: a clock ran out (forfeit).";
    case "timed_out": return `Time ran out for ${name(event.seat)}.`;
    case "seat_away": return event.reason === "marked"
      ? `${name(event.seat)} was marked away: the service moves for them until they are back.`
      : `${name(event.seat)} is away after running out of time: the service moves for them until they are back.`;
    case "seat_returned": return `${name(event.seat)} is back.`;
    default: return null;
  }
}

/** A countdown to `deadlineMs` at `nowMs`: "12 s left", "4 s left (bank)" once only the
 * seat's bank of `bankS` seconds is left, "time is up" at the deadline. */
export function countdownWords(deadlineMs, bankS, nowMs) {
  const left = Math.ceil((deadlineMs - nowMs) / 1000);
  if (left <= 0) return "time is up";
  const minutes = Math.floor(left / 60);
  const shown = minutes ? `${minutes}:${String(left % 60).padStart(2, "0")}` : `${left} s`;
  return bankS > 0 && left <= Math.ceil(bankS) ? `${shown} left (bank)` : `${shown} left`;
}
