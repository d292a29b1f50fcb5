// Which session and app scope this browser chats in, and the ones it chatted in lately.

/** A session or app id the server takes (its NAME_PATTERN), unanchored. */
export const NAME = "[A-Za-z0-9_.:\\-]{1,128}";

const CHOICE = "mnemo.chat";
const SESSIONS = "mnemo.sessions";
const APPS = "mnemo.apps";
const RECENT = 20;

/** A new session id: the day and a random tail, e.g. "chat-20261126-3f2a9c". */
export function newSessionId() {
  const day = new Date().toISOString().slice(0, 10).replaceAll("-", "");
  const tail = Array.from(crypto.getRandomValues(new Uint8Array(3)), (b) =>
    b.toString(16).padStart(2, "0"),
  ).join("");
  return `chat-${day}-${tail}`;
}

/** The session and app last chatted in here, or a new session in the global scope. */
export function keptChoice() {
  const kept = read(CHOICE, null);
  if (typeof kept?.session === "string" && typeof kept?.app === "string") return kept;
  return { session: newSessionId(), app: "global" };
}

export function keepChoice(session, app) {
  localStorage.setItem(CHOICE, JSON.stringify({ session, app }));
  remember(SESSIONS, session);
  if (app !== "global") remember(APPS, app);
}

export function recentSessions() {
  return readList(SESSIONS);
}

export function recentApps() {
  return readList(APPS);
}

function remember(list, value) {
  const values = [value, ...readList(list).filter((kept) => kept !== value)].slice(0, RECENT);
  localStorage.setItem(list, JSON.stringify(values));
}

function readList(name) {
  const values = read(name, []);
  return Array.isArray(values) ? values.filter((value) => typeof value === "string") : [];
}

function read(name, otherwise) {
  try {
    return JSON.parse(localStorage.getItem(name)) ?? otherwise;
  } catch {
    return otherwise; // not ours, or edited by hand: start again
  }
}
