// The API key this browser keeps for a server that asks for one (MNEMO_API_KEYS), and
// the small dialog that asks for it. The key never leaves this browser except to the
// server: as a bearer token over REST and as a subprotocol entry on the WebSocket.

import { element } from "./dom.js";

const STORAGE = "mnemo.key";

/** Dispatches "change" when a key is kept or forgotten: what was refused may work now. */
export const keyChanges = new EventTarget();

/** The key kept in this browser, or null. */
export function keptKey() {
  return localStorage.getItem(STORAGE);
}

let asking = null;

/**
 * Ask for the key in a modal dialog and keep it. Resolves to the key, or null when the
 * person cancels (or forgets the kept key). Calls while the dialog is open share it, so
 * several refused requests at once ask once.
 * @param {{refused?: boolean}} options refused: the kept key was just refused; say so.
 */
export function askKey({ refused = false } = {}) {
  asking ??= showDialog(refused).finally(() => {
    asking = null;
  });
  return asking;
}

function showDialog(refused) {
  const dialog = keyDialog();
  const form = dialog.querySelector("form");
  const input = dialog.querySelector("input");
  dialog.querySelector(".key-refused").hidden = !refused;
  dialog.querySelector(".key-forget").hidden = keptKey() === null;
  form.reset();
  dialog.returnValue = "";
  dialog.showModal();
  input.focus();
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => {
        const key = input.value.trim();
        if (dialog.returnValue === "save" && key) {
          localStorage.setItem(STORAGE, key);
          resolve(key);
          keyChanges.dispatchEvent(new Event("change"));
        } else {
          if (dialog.returnValue === "forget") {
            localStorage.removeItem(STORAGE);
            keyChanges.dispatchEvent(new Event("change"));
          }
          resolve(null);
        }
      },
      { once: true },
    );
  });
}

function keyDialog() {
  const existing = document.getElementById("key-dialog");
  if (existing) return existing;
  const dialog = element("dialog", { id: "key-dialog", class: "key-dialog" });
  dialog.setAttribute("aria-labelledby", "key-title");
  dialog.setAttribute("aria-describedby", "key-help");
  const form = element("form", { method: "dialog" });
  const title = element("h2", { id: "key-title" }, "API key");
  const help = element(
    "p",
    { id: "key-help" },
    "This mnemo server asks for an API key (one of its MNEMO_API_KEYS). " +
      "It is kept in this browser only.",
  );
  const refused = element("p", { class: "key-refused", role: "alert" }, "That key was refused.");
  const label = element("label", { for: "key-input" }, "Key");
  const input = element("input", {
    id: "key-input",
    name: "key",
    type: "password",
    autocomplete: "current-password",
    spellcheck: "false",
    required: "",
  });
  const actions = element("div", { class: "dialog-actions" });
  const forget = element(
    "button",
    { type: "submit", value: "forget", class: "key-forget quiet", formnovalidate: "" },
    "Forget key",
  );
  const cancel = element("button", { type: "submit", value: "cancel", formnovalidate: "" }, "Cancel");
  const save = element("button", { type: "submit", value: "save", class: "primary" }, "Save key");
  actions.append(forget, cancel, save);
  // Enter in the field saves (a form's implicit submission would press its first button).
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit(save);
    }
  });
  form.append(title, help, refused, label, input, actions);
  dialog.append(form);
  document.body.append(dialog);
  return dialog;
}
