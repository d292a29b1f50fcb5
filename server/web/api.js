// What the chat and the Memory Panel share: REST calls with the kept key, the sentence
// for a server that does not answer, and the events they tell each other.

import { askKey, keptKey } from "./key.js";

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

/** What a REST call failed with: the server's answer (`status`), or none (`status` 0). */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** The sentence for a server that does not answer, naming where the page looked. */
export function cantReach() {
  return `Can't reach mnemo at ${location.origin}: is mnemo serve running?`;
}

/** A REST call as JSON; asks for a key when the server answers 401, again while the
 * person gives keys it refuses. Throws an ApiError: status 0 when nothing answered. */
export async function api(path, options = {}) {
  let answer;
  try {
    answer = await fetch(path, { ...options, headers: { ...authHeaders(), ...options.headers } });
  } catch {
    throw new ApiError(0, cantReach()); // not "Failed to fetch": the server is down or away
  }
  if (answer.status === 401 && (await askKey({ refused: keptKey() !== null })) !== null) {
    return api(path, options);
  }
  const body = answer.headers.get("content-type")?.includes("json") ? await answer.json() : null;
  if (answer.status === 401) throw new ApiError(401, "this server needs an API key");
  if (!answer.ok) {
    throw new ApiError(answer.status, body?.error?.message ?? `HTTP ${answer.status}`);
  }
  return body;
}
