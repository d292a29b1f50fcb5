// The conversation as the page shows it: a log of messages (`.msg.user`, `.msg.assistant`)
// and notes between them (a fact remembered, an error, a reconnection). Text is set as
// text only: nothing a model or a person wrote is parsed as HTML.

import { element } from "./dom.js";

/** What each error code of protocol v1 means for the person chatting. */
const ERRORS = {
  llm_unavailable:
    "The language model can't be reached (is Ollama running?). Your message is saved: " +
    "send it again when the model is back.",
  llm_timeout: "The language model took too long to answer. Your message is saved: try again.",
  llm_error: "The language model answered with an error. Your message is saved: try again.",
  rate_limited: "That was a lot at once: wait a moment and send it again.",
  overloaded: "This session is still busy with earlier messages: send it again in a moment.",
  archive_unavailable:
    "The memory store is not answering. Your message stays queued and is saved when it is back.",
  session_closed: "The session ended before it could answer: send your message again.",
  too_many_sessions:
    "You have too many open sessions on this server: end some, or wait until they expire.",
  unauthorized: "The server refused the API key.",
};

/** A readable sentence for an `error` frame's code (and its message, where it helps). */
export function describeError(code, message) {
  if (code === "bad_request") return `The server could not take that message: ${message}.`;
  return ERRORS[code] ?? `Something went wrong (${code}): ${message}`;
}

export class Conversation {
  /** @param {HTMLElement} log the `role="log"` element messages go into */
  constructor(log) {
    this.log = log;
  }

  clear() {
    this.log.replaceChildren();
  }

  get empty() {
    return this.log.childElementCount === 0;
  }

  /** A finished message: `role` "user" or "assistant". */
  message(role, text) {
    const node = messageElement(role);
    node.querySelector(".text").textContent = text;
    this.#append(node);
    return node;
  }

  /** An assistant message that grows as its `delta`s arrive. */
  reply(chatId) {
    const node = messageElement("assistant");
    node.dataset.chatId = chatId;
    node.classList.add("streaming");
    node.setAttribute("aria-busy", "true");
    this.#append(node);
    return new Reply(node, this);
  }

  /** A note between messages; `kind`: "remembered", "error", "info". */
  note(text, kind = "info") {
    const node = element("p", { class: `note ${kind}` });
    if (kind === "error") node.append(element("span", { class: "who" }, "Error: "));
    node.append(text);
    this.#append(node);
    return node;
  }

  /** The code of the last line when it is an error note, else undefined. */
  get lastCode() {
    return this.log.lastElementChild?.dataset.code;
  }

  error(code, message) {
    const node = this.note(describeError(code, message), "error");
    node.dataset.code = code;
    return node;
  }

  /** Keep the newest line in view, unless the person scrolled up to read. */
  follow(append) {
    const scroller = this.log;
    const atBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
    append();
    if (atBottom) scroller.scrollTop = scroller.scrollHeight;
  }

  #append(node) {
    this.follow(() => this.log.append(node));
  }
}

/** The assistant message of one `chat`, as its frames arrive. */
class Reply {
  constructor(node, conversation) {
    this.node = node;
    this.text = node.querySelector(".text");
    this.conversation = conversation;
  }

  get said() {
    return this.text.textContent;
  }

  add(piece) {
    this.conversation.follow(() => this.text.append(piece));
  }

  /** `done`: the exchange is archived as turn `turn`. */
  finish(turn) {
    this.#settle();
    this.node.dataset.turn = String(turn);
  }

  /** No reply (an `error`, a lost connection): drop an empty bubble, keep a partial one. */
  stop() {
    this.#settle();
    if (!this.said) this.node.remove();
    else this.node.classList.add("interrupted");
  }

  #settle() {
    this.node.classList.remove("streaming");
    this.node.removeAttribute("aria-busy");
  }
}

function messageElement(role) {
  const node = element("div", { class: `msg ${role}` });
  node.append(element("span", { class: "who" }, role === "user" ? "You: " : "mnemo: "));
  node.append(element("div", { class: "text" }));
  return node;
}
