// The page's entry: who the user is (an API key kept in this browser when the server
// asks for one) and the server's state. The chat and the Memory Panel build on it.

import { mountChat } from "./chat.js";
import { askKey, keptKey } from "./key.js";
import { mountPanel } from "./panel.js";

/**
 * What the chat and the Memory Panel tell each other, as DOM events on one target:
 * - "memory-changed" (detail: a WebSocket `memory` frame, or null after a REST change):
 *   the chat got a `memory` frame; the panel and its header pill refresh.
 * - "session" (detail: {session_id, scope}): the chat switched session or app scope.
 */
export const bus = new EventTarget();

/** Headers for a REST call: the kept key as a bearer token, when there is one. */
export function authHeaders() {
  const key = keptKey();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

/** A REST call as JSON; asks for a key once when the server answers 401. */
export async function api(path, options = {}) {
  const answer = await fetch(path, { ...options, headers: { ...authHeaders(), ...options.headers } });
  if (answer.status === 401 && !options.retried) {
    if (await askKey({ refused: keptKey() !== null })) {
      return api(path, { ...options, retried: true });
    }
  }
  const body = answer.headers.get("content-type")?.includes("json") ? await answer.json() : null;
  if (!answer.ok) {
    const message = body?.error?.message ?? `HTTP ${answer.status}`;
    throw new Error(message);
  }
  return body;
}

async function start() {
  const status = document.getElementById("status");
  try {
    const health = await api("/healthz");
    status.textContent = health.status === "ok" ? "connected" : "server unwell";
  } catch (error) {
    status.textContent = `server unreachable: ${error.message}`;
  }
}

mountChat();
start();
mountPanel();
