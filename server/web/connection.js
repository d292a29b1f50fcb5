// One chat session's WebSocket (protocol v1, docs/protocol.md), kept open: when the
// socket closes (the server restarts, the network drops) it reconnects with backoff,
// and the server resumes the same session (its `ready` frame says `resumed`).

import { askKey, keptKey } from "./key.js";

/** Waits before the next attempt, in milliseconds: the last one repeats. */
const DELAYS = [500, 1000, 2000, 4000, 8000];

/**
 * Events:
 * - "frame" (detail: a server frame, parsed);
 * - "state" (detail: {state, delay?, down?}): "connecting", "live" (after `ready`), "waiting"
 *   (the next attempt in `delay` ms; `down`: the server did not answer), "needs-key" (asking for a key; stays when the person
 *   declines to give one);
 * - "lost" (detail: {wasLive}): the socket closed under us.
 */
export class Connection extends EventTarget {
  #session;
  #app;
  #socket = null;
  #live = false;
  #attempt = 0;
  #timer = null;
  #stopped = false;

  /** @param {string} session a session id; @param {string} app an app scope ("" or "global": none) */
  constructor(session, app) {
    super();
    this.#session = session;
    this.#app = app;
  }

  get live() {
    return this.#live;
  }

  start() {
    this.#connect();
  }

  /** Send a frame now; false (nothing sent) unless the session is live. */
  send(frame) {
    if (!this.#live) return false;
    this.#socket.send(JSON.stringify(frame));
    return true;
  }

  /** Skip the wait before the next attempt (the person asked, or the network is back). */
  retryNow() {
    if (this.#timer === null) return;
    clearTimeout(this.#timer);
    this.#timer = null;
    this.#connect();
  }

  /** Close for good (the page switches session): no reconnect. */
  stop() {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = null;
    this.#live = false;
    this.#socket?.close(1000);
    this.#socket = null;
  }

  async #connect() {
    if (this.#stopped) return;
    this.#state("connecting");
    // A browser cannot read why a handshake failed: ask REST whether the key is refused.
    const access = await probe();
    if (this.#stopped) return;
    if (access === "down") {
      this.#wait(true);
      return;
    }
    if (access === "refused") {
      this.#state("needs-key");
      const key = await askKey({ refused: keptKey() !== null });
      if (this.#stopped) return;
      if (key !== null) this.#connect();
      return;
    }
    const socket = new WebSocket(socketUrl(this.#session, this.#app), socketProtocols(keptKey()));
    this.#socket = socket;
    socket.addEventListener("message", (event) => this.#receive(socket, event));
    socket.addEventListener("close", () => this.#closed(socket));
  }

  #receive(socket, event) {
    if (socket !== this.#socket) return;
    let frame;
    try {
      frame = JSON.parse(event.data);
    } catch {
      return; // not protocol v1: nothing to show
    }
    if (frame.type === "ready") {
      this.#attempt = 0;
      this.#live = true;
      this.#state("live");
    }
    this.dispatchEvent(new CustomEvent("frame", { detail: frame }));
  }

  #closed(socket) {
    if (socket !== this.#socket) return;
    const wasLive = this.#live;
    this.#socket = null;
    this.#live = false;
    this.dispatchEvent(new CustomEvent("lost", { detail: { wasLive } }));
    this.#wait();
  }

  /** @param {boolean} down nothing answered (else the socket closed, or was refused) */
  #wait(down = false) {
    if (this.#stopped) return;
    const base = DELAYS[Math.min(this.#attempt, DELAYS.length - 1)];
    const delay = Math.round(base * (0.8 + Math.random() * 0.4)); // spread many tabs' retries
    this.#attempt += 1;
    this.#state("waiting", delay, down);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#connect();
    }, delay);
  }

  #state(state, delay, down = false) {
    this.dispatchEvent(new CustomEvent("state", { detail: { state, delay, down } }));
  }
}

/** "open" (a key is not needed or is accepted), "refused" (401) or "down" (no answer).
 * It asks for the taxonomy: a small answer every user has (a new session's working memory
 * would answer 404 until its first message). */
async function probe() {
  const key = keptKey();
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  try {
    const answer = await fetch("/memory/categories", { headers });
    return answer.status === 401 ? "refused" : "open";
  } catch {
    return "down";
  }
}

function socketUrl(session, app) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const query = new URLSearchParams();
  if (app && app !== "global") query.set("app", app);
  const search = query.toString();
  return `${scheme}://${location.host}/ws/${encodeURIComponent(session)}${search ? "?" : ""}${search}`;
}

/**
 * The subprotocols a socket offers: "mnemo" (which the server answers) and, with a key,
 * "mnemo.bearer.<the key as unpadded base64url>". A browser cannot set Authorization on
 * a WebSocket, and a key in the URL would end up in logs and history (docs/protocol.md).
 */
export function socketProtocols(key) {
  if (!key) return ["mnemo"];
  const bytes = new TextEncoder().encode(key);
  const encoded = btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
  return ["mnemo", `mnemo.bearer.${encoded}`];
}
