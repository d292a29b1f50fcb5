// The chat page: pick or start a session (and an app scope) in the header, talk in it
// over protocol v1, and see what mnemo remembers as it learns.

import { api, bus, cantReach } from "./api.js";
import { Connection } from "./connection.js";
import { Conversation } from "./conversation.js";
import { element } from "./dom.js";
import { askKey, keptKey } from "./key.js";
import { recentApps, recentSessions, keepChoice, keptChoice, newSessionId, NAME } from "./sessions.js";

/** Build the chat into `#chat-controls` and `<main id="chat">`, and open the kept session. */
export function mountChat() {
  const controls = buildControls(document.getElementById("chat-controls"));
  const page = buildPage(document.getElementById("chat"));
  const conversation = new Conversation(page.log);
  let current = null;

  function open(session, app) {
    current?.close();
    keepChoice(session, app);
    controls.session.value = session;
    controls.app.value = app === "global" ? "" : app;
    fillList(controls.sessions, recentSessions());
    fillList(controls.apps, recentApps());
    conversation.clear();
    current = new ChatSession(session, app, conversation, page, controls);
    // After this task: a panel mounted right after the chat hears the first session too.
    const detail = { session_id: session, scope: app };
    queueMicrotask(() => bus.dispatchEvent(new CustomEvent("session", { detail })));
  }

  function openFromControls() {
    const session = controls.session.value.trim();
    const app = controls.app.value.trim() || "global";
    if (!checkName(controls.session, session) || !checkName(controls.app, app)) return;
    if (session !== current?.session || app !== current?.app) open(session, app);
  }

  controls.form.addEventListener("submit", (event) => {
    event.preventDefault();
    openFromControls();
  });
  controls.session.addEventListener("change", openFromControls);
  controls.app.addEventListener("change", openFromControls);
  controls.fresh.addEventListener("click", () => open(newSessionId(), current?.app ?? "global"));
  controls.key.addEventListener("click", async () => {
    if ((await askKey()) !== null || keptKey() === null) {
      open(current.session, current.app); // another key may be another user (the panel
      // hears of the key itself)
    }
    controls.key.hidden = keptKey() === null;
  });
  page.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = page.input.value;
    if (!text.trim()) return;
    page.input.value = "";
    fitToText(page.input);
    current.say(text);
  });
  page.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      page.composer.requestSubmit();
    }
  });
  page.input.addEventListener("input", () => fitToText(page.input));
  page.retry.addEventListener("click", () => current.retry());
  window.addEventListener("online", () => current.retryNow());
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") current.retryNow();
  });

  const kept = keptChoice();
  open(kept.session, kept.app);
}

/** One session on one connection: what the person says, and the frames that answer. */
class ChatSession {
  #connection;
  #replies = new Map();
  #waiting = []; // chats said while offline, sent once the session is live again
  #readies = 0;
  #lost = false;
  #sent = 0;
  #closed = false;

  constructor(session, app, conversation, page, controls) {
    this.session = session;
    this.app = app;
    this.conversation = conversation;
    this.page = page;
    this.controls = controls;
    this.#connection = new Connection(session, app);
    this.#connection.addEventListener("frame", (event) => this.#receive(event.detail));
    this.#connection.addEventListener("state", (event) => this.#show(event.detail));
    this.#connection.addEventListener("lost", (event) => this.#connectionLost(event.detail));
    this.#connection.start();
  }

  close() {
    this.#closed = true;
    this.#connection.stop();
  }

  retryNow() {
    this.#connection.retryNow();
  }

  /** The banner's button: retry now, or ask for the key the person declined to give. */
  async retry() {
    if (this.page.chat.dataset.state !== "needs-key") {
      this.retryNow();
      return;
    }
    if ((await askKey()) !== null) this.#connection.start();
  }

  say(text) {
    this.#sent += 1;
    const id = `c${Date.now().toString(36)}-${this.#sent}`;
    const said = this.conversation.message("user", text);
    if (this.#connection.live) {
      this.#chat(id, text);
    } else {
      said.classList.add("queued");
      this.#waiting.push({ id, text, said });
    }
  }

  #chat(id, text) {
    this.#connection.send({ type: "chat", id, content: text });
    this.#replies.set(id, this.conversation.reply(id));
  }

  #receive(frame) {
    switch (frame.type) {
      case "ready":
        this.#ready(frame);
        break;
      case "delta":
        this.#replies.get(frame.id)?.add(frame.text);
        break;
      case "done":
        this.#replies.get(frame.id)?.finish(frame.turn);
        this.#replies.delete(frame.id);
        break;
      case "error":
        this.#replies.get(frame.id)?.stop();
        this.#replies.delete(frame.id);
        if (frame.id || this.conversation.lastCode !== frame.code) {
          this.conversation.error(frame.code, frame.message); // once per refused reconnect
        }
        break;
      case "memory":
        this.#remembered(frame);
        break;
      default:
        break; // pong, ack, context: the page asks for none of them
    }
  }

  #ready(frame) {
    this.#readies += 1;
    const turns = frame.turn_count === 1 ? "1 turn" : `${frame.turn_count} turns`;
    if (this.#lost) {
      const how = frame.resumed ? `session resumed after ${turns}` : "a new session started";
      this.conversation.note(`Reconnected: ${how}.`, "info reconnected");
    } else if (this.#readies === 1 && frame.resumed && frame.turn_count > 0) {
      this.#loadHistory(frame.turn_count);
    }
    this.#lost = false;
    for (const { id, text, said } of this.#waiting.splice(0)) {
      said.classList.remove("queued");
      this.#chat(id, text);
    }
  }

  async #loadHistory(turnCount) {
    let turns;
    try {
      const listed = await api("/memory/long-term?kind=turns&limit=200");
      turns = listed.items.filter((item) => item.session_id === this.session);
    } catch (error) {
      if (!this.#closed) this.conversation.note(`Earlier turns were not loaded: ${error.message}`, "error");
      return;
    }
    if (this.#closed) return; // the page moved to another session meanwhile
    turns.sort((a, b) => a.turn - b.turn || (a.role === "user" ? -1 : 1));
    const earlier = turns.map((turn) =>
      this.conversation.message(turn.role === "user" ? "user" : "assistant", turn.text),
    );
    const shown = `Resumed "${this.session}" after ${turnCount === 1 ? "1 turn" : `${turnCount} turns`}.`;
    const heading = this.conversation.note(shown, "info resumed");
    this.conversation.log.prepend(heading, ...earlier);
    this.conversation.log.scrollTop = this.conversation.log.scrollHeight;
  }

  #remembered(frame) {
    bus.dispatchEvent(new CustomEvent("memory-changed", { detail: frame }));
    for (const fact of frame.added ?? []) {
      this.conversation.note(`Remembered: ${fact.content}`, "remembered");
    }
  }

  #connectionLost({ wasLive }) {
    for (const reply of this.#replies.values()) reply.stop();
    if (this.#replies.size) {
      this.conversation.note("The connection dropped during the reply: what arrived is kept.", "error");
    }
    this.#replies.clear();
    if (wasLive) this.#lost = true;
  }

  #show({ state, delay, down }) {
    const { chat, banner, bannerText, retry, status } = this.page;
    chat.dataset.state = state;
    status.textContent = STATES[state];
    banner.hidden = state === "live";
    retry.hidden = state !== "waiting" && state !== "needs-key";
    this.controls.key.hidden = keptKey() === null && state !== "needs-key";
    if (state === "connecting") {
      bannerText.textContent = "Connecting…";
    } else if (state === "waiting") {
      const seconds = Math.max(1, Math.round(delay / 1000));
      const why = down ? cantReach() : "Not connected to the server.";
      bannerText.textContent = `${why} Trying again in ${seconds} s.`;
      retry.textContent = "Retry now";
    } else if (state === "needs-key") {
      bannerText.textContent = "This server needs an API key to chat.";
      retry.textContent = "Enter key";
    }
  }
}

/** The header's status line (a live region) for each state of the connection. */
const STATES = {
  connecting: "connecting…",
  live: "connected",
  waiting: "offline, reconnecting…",
  "needs-key": "needs an API key",
};

function buildControls(root) {
  const form = element("form", { class: "chat-controls", "aria-label": "Chat session" });
  const session = element("input", {
    id: "session-id",
    name: "session",
    list: "recent-sessions",
    placeholder: "session id",
    autocomplete: "off",
    spellcheck: "false",
    required: "",
    pattern: NAME,
    maxlength: "128",
  });
  const app = element("input", {
    id: "app-scope",
    name: "app",
    list: "recent-apps",
    placeholder: "global",
    autocomplete: "off",
    spellcheck: "false",
    pattern: NAME,
    maxlength: "128",
  });
  const sessions = element("datalist", { id: "recent-sessions" });
  const apps = element("datalist", { id: "recent-apps" });
  const fresh = element("button", { type: "button", class: "new-chat" }, "New chat");
  const key = element("button", { type: "button", class: "quiet", hidden: "" }, "API key");
  const open = element("button", { type: "submit", class: "visually-hidden" }, "Open");
  form.append(
    labelled("Session", session),
    sessions,
    labelled("App", app),
    apps,
    open,
    fresh,
    key,
  );
  root.append(form);
  return { form, session, app, sessions, apps, fresh, key };
}

function buildPage(chat) {
  // Not a live region: the header's #status announces the same change in fewer words.
  const banner = element("div", { class: "link-banner" });
  const bannerText = element("span");
  const retry = element("button", { type: "button", class: "quiet", hidden: "" }, "Retry now");
  banner.append(bannerText, retry);
  const log = element("div", {
    id: "conversation",
    class: "log",
    role: "log",
    "aria-live": "polite",
    "aria-label": "Conversation",
    tabindex: "0",
  });
  const composer = element("form", { class: "composer", "aria-label": "Send a message" });
  const label = element("label", { for: "message", class: "visually-hidden" }, "Message");
  const input = element("textarea", {
    id: "message",
    name: "message",
    rows: "1",
    placeholder: "Message mnemo",
    "aria-describedby": "message-hint",
  });
  const hint = element(
    "span",
    { id: "message-hint", class: "hint" },
    "Enter sends, Shift+Enter starts a new line",
  );
  const send = element("button", { type: "submit", class: "primary" }, "Send");
  composer.append(label, input, send, hint);
  chat.append(banner, log, composer);
  const status = document.getElementById("status");
  return { chat, banner, bannerText, retry, status, log, composer, input };
}

function labelled(text, input) {
  const label = element("label", { class: "field" });
  label.append(element("span", {}, text), input);
  return label;
}

function fillList(list, values) {
  list.replaceChildren(...values.map((value) => element("option", { value })));
}

/** A session or app id the server takes, or say why not beside the field. */
function checkName(input, value) {
  const ok = new RegExp(`^${NAME}$`).test(value);
  input.setCustomValidity(ok ? "" : "1-128 of A-Z a-z 0-9 _ . : -");
  input.setAttribute("aria-invalid", String(!ok));
  if (!ok) input.reportValidity();
  return ok;
}

/** Grow the message box with its text, up to a third of the screen. */
function fitToText(input) {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, window.innerHeight / 3)}px`;
}
