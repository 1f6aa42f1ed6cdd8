// The HTTP API of docs/api.md, as the pages use it: JSON reads, actions, and the event stream.
// A seat's token is sent only as `Authorization: Bearer`; it never goes into a URL.

/** A refusal: the RFC 9457 problem the server answered, or a transport failure. */
export class Refusal extends Error {
  constructor(status, code, detail) {
    super(detail || code);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

function headersFor(token, extra = {}) {
  const headers = { Accept: "application/json", ...extra };
  if (token) headers.Authorization = `Bearer ${token}`;
  return headers;
}

async function answer(response) {
  const type = response.headers.get("content-type") || "";
  const body = type.includes("json") ? await response.json() : null;
  if (response.ok) return body;
  if (body && body.code) throw new Refusal(response.status, body.code, body.detail);
  throw new Refusal(response.status, "unavailable", `the server answered ${response.status}`);
}

const SKEW_SAMPLES = 7;
const SKEW_IGNORED_MS = 2000;
const skew = []; // server time minus this device's, one sample per answer, newest last

/** Note the server's time from an answer's Date header (whole seconds), against the middle of
 * the round trip on this device's clock. */
function noteServerTime(response, sentAt) {
  const date = Date.parse(response.headers.get("date") || "");
  if (Number.isNaN(date)) return;
  skew.push(date + 500 - (sentAt + Date.now()) / 2);
  if (skew.length > SKEW_SAMPLES) skew.shift();
}

/** This device's clock is wrong by this much (ms, to add to Date.now() for the server's time):
 * the median of the last answers, taken as none under two seconds (the header counts whole
 * seconds). A countdown to a server deadline drawn on a device set minutes off is right. */
export function serverOffsetMs() {
  if (!skew.length) return 0;
  const sorted = [...skew].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return Math.abs(median) < SKEW_IGNORED_MS ? 0 : median;
}

const TRIES = 3;
const MOST_RETRY_AFTER_S = 5;
const RETRIED = [429, 503];

function retryAfterMs(response) {
  const seconds = Number(response.headers.get("retry-after")) || 1;
  return Math.min(seconds, MOST_RETRY_AFTER_S) * 1000;
}

/** GET a JSON resource; with `token`, as that seat. A 429 or 503 is asked again (a read
 * changes nothing) after its Retry-After, a few times. */
export async function get(path, token = null) {
  for (let attempt = 1; ; attempt += 1) {
    let response;
    const sentAt = Date.now();
    try {
      response = await fetch(path, { headers: headersFor(token), cache: "no-store" });
    } catch (error) {
      throw new Refusal(0, "unreachable", "the server cannot be reached");
    }
    noteServerTime(response, sentAt);
    if (!RETRIED.includes(response.status) || attempt === TRIES) return answer(response);
    await new Promise((resolve) => setTimeout(resolve, retryAfterMs(response)));
  }
}

/** A new idempotency key (crypto.randomUUID exists only on HTTPS or localhost pages). */
function freshKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** POST one action for the seat; the answer is `{version, events}`. A 503 (the engine did not
 * answer in time) or a 429 is tried again after its Retry-After with the same Idempotency-Key,
 * so the move is made once however many tries it takes. */
export async function act(gameId, token, action) {
  const key = freshKey();
  for (let attempt = 1; ; attempt += 1) {
    let response;
    try {
      response = await fetch(`/v1/games/${encodeURIComponent(gameId)}/actions`, {
        method: "POST",
        headers: headersFor(token, { "Content-Type": "application/json", "Idempotency-Key": key }),
        body: JSON.stringify(action),
      });
    } catch (error) {
      throw new Refusal(0, "unreachable", "the server cannot be reached");
    }
    if (!RETRIED.includes(response.status) || attempt === TRIES) return answer(response);
    await new Promise((resolve) => setTimeout(resolve, retryAfterMs(response)));
  }
}

const RETRY_FIRST_MS = 250;
const RETRY_MOST_MS = 4000;

/**
 * Follow a game's server-sent events (`GET /v1/games/{id}/events/stream`) until `stop()`.
 *
 * `onState(state)` gets the first `state` event (and a fresh one if the server cannot resume);
 * `onEvent({version, type, event})` every event after it; `onStatus("live" | "reconnecting" |
 * "closed", detail)` the connection's state. When the connection drops it is made again, with
 * `Last-Event-ID` set to the last event seen, so nothing is missed or shown twice. Read with
 * fetch rather than EventSource, so that the seat's token goes in a header, not the URL.
 */
export function follow(gameId, token, { onState, onEvent, onStatus }) {
  const controller = new AbortController();
  let lastId = null;
  let stopped = false;

  async function connectOnce() {
    const extra = { Accept: "text/event-stream" };
    if (lastId !== null) extra["Last-Event-ID"] = lastId;
    const response = await fetch(`/v1/games/${encodeURIComponent(gameId)}/events/stream`, {
      headers: headersFor(token, extra),
      cache: "no-store",
      signal: controller.signal,
    });
    if (!response.ok) await answer(response); // throws the problem
    if (response.status === 204) return end({ reason: "game_over" }); // over, and we have it all
    onStatus("live", lastId === null ? "connected" : `resumed after event ${lastId}`);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done || stopped) return;
      buffer += value.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        dispatch(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  }

  /** The server's last frame: the stream is over for good (the game ended, or the token). */
  function end(payload) {
    stopped = true;
    onStatus("closed", payload.reason);
  }

  function dispatch(block) {
    let name = "message";
    let id = null;
    const data = [];
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue; // a keep-alive comment
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
      else if (field === "id") id = value;
    }
    if (data.length === 0) return;
    if (id !== null) lastId = id;
    const payload = JSON.parse(data.join("\n"));
    if (name === "end") end(payload);
    else if (name === "state") onState(payload);
    else onEvent({ version: Number(id), type: name, event: payload });
  }

  (async () => {
    let wait = RETRY_FIRST_MS;
    while (!stopped) {
      try {
        await connectOnce();
        wait = RETRY_FIRST_MS;
      } catch (error) {
        if (stopped) return;
        if (error instanceof Refusal && error.status >= 400 && error.status < 500) {
          onStatus("closed", error.code, error);
          return;
        }
      }
      if (stopped) return;
      onStatus("reconnecting", lastId === null ? "" : `after event ${lastId}`);
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, RETRY_MOST_MS);
    }
  })();

  return {
    stop() {
      stopped = true;
      controller.abort();
    },
  };
}

/** The value of `name` in the URL fragment (`#token=...`), which no browser ever sends. */
export function fragmentValue(name) {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  return params.get(name);
}

/** Whether a token from the fragment is a watch link's (it reads; it never acts). */
export function isWatchLink(token) {
  return typeof token === "string" && token.startsWith("wl1.");
}

/** The last segment of the path: the game's or the league's id. */
export function pathId() {
  const parts = location.pathname.split("/").filter(Boolean);
  return decodeURIComponent(parts[parts.length - 1] || "");
}
