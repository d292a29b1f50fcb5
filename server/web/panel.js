// The Memory Panel (seed 004): every fact the server keeps about the user, on cards
// grouped by category, edited in place, pinned, deleted with an undo, cleared with a
// deferred wipe. It opens as a sheet over the conversation from the header's pill.
// Everything goes through the REST API of docs/rest.md.

import { api, bus } from "./api.js";
import { keyChanges } from "./key.js";

/**
 * How long an undo stays offered, in milliseconds: a deleted fact's DELETE is sent
 * when its toast expires (seed 004: 4 s), a "Clear all" wipe after its bar's (8 s).
 * Tests shorten them through this object; nothing else changes them.
 */
export const delays = { undo: 4000, clear: 8000 };

const PAGE = 200; // the REST list's largest page
const DOUBLE_CLICK_MS = 250; // a click waits this long for its second one before editing
const PULSE_MS = 1400;
const NOTICE_MS = 5000;
const FOCUSABLE = "button, input, select, textarea, [tabindex]";
const KNOWN_COLOURS = new Set([
  "project", "preference", "identity", "goal", "correction", "knowledge", "behavior", "context",
]);
const SVG = "http://www.w3.org/2000/svg";
const ICONS = {
  pin: "M15 3l6 6-3 1-4 4 1 5-2 2-4-4-5 5-1-1 5-5-4-4 2-2 5 1 4-4z",
  edit: "M4 20h4L19 9l-4-4L4 16v4zM14 6l4 4",
  delete: "M5 7h14M10 7V4h4v3M7 7l1 13h8l1-13",
  close: "M6 6l12 12M18 6L6 18",
  before: "M15 5l-7 7 7 7",
  after: "M9 5l7 7-7 7",
  // Keep this: a bookmark with a plus (drawn, not an emoji: without an emoji font an emoji
  // is an empty box).
  remember: "M7 3.5h10a1 1 0 0 1 1 1V21l-6-4-6 4V4.5a1 1 0 0 1 1-1zM12 7.5v6M9 10.5h6",
};

/** An element: attributes as given (``on…`` keys are listeners), then its children. */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

function icon(name) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", "mp-icon");
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", ICONS[name]);
  svg.append(path);
  return svg;
}

/** The gentle illustration of the empty state: a small brain of two lobes and a spark. */
function illustration() {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 64 64");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", "mp-empty-art");
  for (const d of [
    "M31 14c-6-5-16-2-16 6-6 2-7 11-2 14-3 6 2 13 9 12 2 5 8 6 9 2z",
    "M33 14c6-5 16-2 16 6 6 2 7 11 2 14 3 6-2 13-9 12-2 5-8 6-9 2z",
    "M22 26c3 0 5 2 5 5M42 26c-3 0-5 2-5 5M24 40c2-2 5-2 7 0M40 40c-2-2-5-2-7 0",
    "M54 6v6M51 9h6",
  ]) {
    const path = document.createElementNS(SVG, "path");
    path.setAttribute("d", d);
    svg.append(path);
  }
  return svg;
}

function plural(count, one, many) {
  return `${count} ${count === 1 ? one : many}`;
}

function quoted(text, length = 48) {
  return `“${text.length > length ? `${text.slice(0, length - 1)}…` : text}”`;
}

function confidenceWord(confidence) {
  if (confidence >= 0.8) return "high";
  return confidence >= 0.5 ? "medium" : "low";
}

/** A stable colour for a category the panel has no colour of its own for. */
function hashedColour(name) {
  let hash = 0;
  for (const char of name) hash = (hash * 31 + char.codePointAt(0)) % 360;
  return `hsl(${hash} 55% 48%)`;
}

function reducedMotion() {
  return window.matchMedia("(prefers-reduced-motion: reduce)").matches;
}

class MemoryPanel {
  constructor(root, pill) {
    this.root = root;
    this.pill = pill;
    this.facts = []; // as listed by the server, newest first
    this.categories = []; // the taxonomy: {name, heading, priority}
    this.tab = "all";
    this.managing = false;
    this.selected = new Set();
    this.hidden = new Set(); // facts deleted while their undo is offered
    this.pending = new Set(); // deletes waiting for their toast to expire
    this.clearing = null; // the wipe waiting behind its bar
    this.editing = null; // the fact id an editor is open for
    this.stale = false; // a refresh arrived while editing
    this.generation = 0;
    this.clickTimer = 0;
    this.isOpen = false;
    this.build();
    this.listen();
  }

  // -- the page's pieces ------------------------------------------------------

  build() {
    this.backdrop = el("div", { class: "mp-backdrop", hidden: true, onclick: () => this.close() });
    this.title = el("h2", { id: "mp-title" }, "Memories");
    this.manageButton = el(
      "button",
      { type: "button", class: "mp-manage", "aria-pressed": "false", onclick: () => this.setManaging(!this.managing) },
      "Manage",
    );
    const closeButton = el(
      "button",
      { type: "button", class: "mp-icon-button mp-close", "aria-label": "Close memories", onclick: () => this.close() },
      icon("close"),
    );
    this.tabs = el("div", { class: "mp-tabs", role: "tablist", "aria-label": "Categories" });
    this.tabs.addEventListener("keydown", (event) => this.moveBetweenTabs(event));
    this.tabs.addEventListener("scroll", () => this.showTabsBeyond(), { passive: true });
    // The tabs run off the edge with many categories: arrows at that edge say so (and
    // scroll on a click; the keyboard moves between tabs with the arrow keys instead).
    const scroller = (side) =>
      el(
        "button",
        {
          type: "button",
          class: `mp-tabs-more mp-tabs-${side}`,
          tabindex: "-1",
          "aria-hidden": "true",
          title: side === "before" ? "More categories before" : "More categories after",
          onclick: () => this.tabs.scrollBy({ left: (side === "before" ? -0.8 : 0.8) * this.tabs.clientWidth }),
        },
        icon(side),
      );
    this.tabBar = el("div", { class: "mp-tabbar" }, this.tabs, scroller("before"), scroller("after"));
    this.list = el("div", { class: "mp-body", role: "tabpanel", tabindex: "-1" });
    this.toasts = el("div", { class: "mp-toasts", "aria-live": "polite" });
    this.input = el("input", {
      type: "text",
      class: "mp-composer-input",
      placeholder: "+ Remember something...",
      "aria-label": "Remember something",
      maxlength: "65536",
    });
    this.composer = el(
      "form",
      { class: "mp-composer", onsubmit: (event) => this.rememberTyped(event) },
      this.input,
    );
    this.clearButton = el(
      "button",
      { type: "button", class: "mp-clear", onclick: () => this.confirmClear() },
      "Clear all",
    );
    this.confirm = el("div", { class: "mp-confirm", role: "group", "aria-label": "Clear all memories", hidden: true });
    this.bulk = this.buildBulkBar();
    this.footer = el("footer", { class: "mp-foot" }, this.composer, this.clearButton, this.confirm, this.bulk);
    this.sheet = el(
      "aside",
      {
        id: "memory-panel",
        class: "mp-sheet",
        role: "dialog",
        "aria-modal": "true",
        "aria-labelledby": "mp-title",
        tabindex: "-1",
        hidden: true,
      },
      el("header", { class: "mp-head" }, this.title, this.manageButton, closeButton),
      this.tabBar,
      this.list,
      this.toasts,
      this.footer,
    );
    this.rememberButton = el(
      "button",
      { type: "button", class: "mp-remember", hidden: true, onclick: () => this.rememberSelection() },
      icon("remember"),
      "Remember",
    );
    // Pressing it must not drop the selection it is about to store.
    this.rememberButton.addEventListener("mousedown", (event) => event.preventDefault());
    this.notice = el("div", { class: "mp-notice", role: "status", hidden: true });
    this.root.replaceChildren(this.backdrop, this.sheet, this.rememberButton, this.notice);
  }

  buildBulkBar() {
    this.selectedCount = el("span", { class: "mp-selected-count" }, "0 selected");
    this.moveSelect = el(
      "select",
      { class: "mp-move", "aria-label": "Move selected to category", onchange: () => this.bulkMove() },
    );
    const action = (label, handler, extra = {}) =>
      el("button", { type: "button", class: "mp-bulk-action", onclick: handler, ...extra }, label);
    this.bulkButtons = [
      action("Pin", () => this.bulkPin(true)),
      action("Unpin", () => this.bulkPin(false)),
      this.moveSelect,
      action("Delete", () => this.bulkDelete(), { class: "mp-bulk-action mp-bulk-delete" }),
    ];
    return el(
      "div",
      { class: "mp-bulk", role: "toolbar", "aria-label": "Selected memories", hidden: true },
      this.selectedCount,
      action("Select all", () => this.selectAll()),
      ...this.bulkButtons,
      action("Done", () => this.setManaging(false)),
    );
  }

  listen() {
    this.pill.addEventListener("click", () => this.toggle());
    document.addEventListener("keydown", (event) => this.onKey(event));
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.refresh();
    });
    bus.addEventListener("memory-changed", () => this.refresh());
    keyChanges.addEventListener("change", () => this.refresh()); // another key: another user
    window.addEventListener("resize", () => this.showTabsBeyond());
    let queued = false;
    document.addEventListener("selectionchange", () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        this.placeRememberButton();
      });
    });
    // Leaving the page accepts what its undos still offered.
    window.addEventListener("pagehide", () => this.commitEverything());
  }

  // -- opening and closing ----------------------------------------------------

  toggle() {
    if (this.isOpen) this.close();
    else this.open();
  }

  open() {
    if (this.isOpen) return;
    this.isOpen = true;
    this.backdrop.hidden = false;
    this.sheet.hidden = false;
    this.pill.setAttribute("aria-expanded", "true");
    document.body.classList.add("mp-locked");
    for (const outside of this.outside()) outside.inert = true;
    this.hideRememberButton();
    this.sheet.focus();
    this.showTabsBeyond();
    this.refresh();
  }

  close() {
    if (!this.isOpen) return;
    this.isOpen = false;
    this.cancelClear();
    this.setManaging(false);
    this.sheet.hidden = true;
    this.backdrop.hidden = true;
    this.pill.setAttribute("aria-expanded", "false");
    document.body.classList.remove("mp-locked");
    for (const outside of this.outside()) outside.inert = false;
    this.pill.focus();
  }

  /** The page behind the sheet: out of reach of focus and pointer while it is open. */
  outside() {
    return [document.querySelector("body > header"), document.getElementById("chat")].filter(Boolean);
  }

  onKey(event) {
    if ((event.ctrlKey || event.metaKey) && event.shiftKey && event.code === "KeyM") {
      event.preventDefault();
      this.toggle();
      return;
    }
    if (!this.isOpen) return;
    if (event.key === "Escape") {
      event.preventDefault();
      if (!this.confirm.hidden) this.cancelClear(true);
      else if (this.managing) this.setManaging(false);
      else this.close();
    } else if (event.key === "Tab") {
      this.trapFocus(event);
    }
  }

  /** Tab and Shift+Tab go round the sheet's controls, never out of it. */
  trapFocus(event) {
    const reachable = [...this.sheet.querySelectorAll(FOCUSABLE)].filter(
      (node) =>
        node.tabIndex >= 0 &&
        !node.disabled &&
        node.getClientRects().length > 0 &&
        getComputedStyle(node).visibility !== "hidden",
    );
    if (reachable.length === 0) return;
    const first = reachable[0];
    const last = reachable[reachable.length - 1];
    const inside = this.sheet.contains(document.activeElement);
    if (event.shiftKey && (document.activeElement === first || document.activeElement === this.sheet || !inside)) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (document.activeElement === last || !inside)) {
      event.preventDefault();
      first.focus();
    }
  }

  // -- what the server knows --------------------------------------------------

  /** Lists every active fact again (the list pages through all of them) and shows them. */
  async refresh() {
    const generation = ++this.generation;
    try {
      if (this.categories.length === 0) {
        this.categories = (await api("/memory/categories")).categories;
      }
      const facts = [];
      for (let offset = 0; ; offset += PAGE) {
        const page = await api(`/memory/long-term?kind=facts&limit=${PAGE}&offset=${offset}`);
        facts.push(...page.items);
        if (page.items.length < PAGE || facts.length >= page.total) break;
      }
      if (generation !== this.generation) return; // a newer refresh is on its way
      this.facts = facts;
      this.render();
    } catch (error) {
      if (generation !== this.generation) return;
      // Refused (no key, or one the person would not give): the chat's banner asks for it,
      // and a new key refreshes. Nothing answered: the banner says so; an open sheet too.
      if (error.status === 401) return;
      if (error.status === 0) {
        if (this.isOpen) this.toast(error.message, { alert: true });
        return;
      }
      this.toast(`Could not load memories: ${error.message}`);
    }
  }

  /** The facts on screen: not deleted while an undo is offered, none while a clear waits. */
  shown() {
    if (this.clearing) return [];
    return this.facts.filter((fact) => !this.hidden.has(fact.id));
  }

  factOf(id) {
    return this.facts.find((fact) => fact.id === id);
  }

  cardOf(id) {
    return this.list.querySelector(`.mp-card[data-id="${CSS.escape(id)}"]`);
  }

  labelOf(name) {
    const category = this.categories.find((c) => c.name === name);
    const heading = category?.heading.replace(/:\s*$/, "");
    return heading || name.charAt(0).toUpperCase() + name.slice(1);
  }

  /** Category names in the taxonomy's order, then any others the facts carry. */
  orderedCategories(facts) {
    const names = this.categories.map((c) => c.name);
    for (const fact of facts) if (!names.includes(fact.category)) names.push(fact.category);
    return names;
  }

  // -- drawing ----------------------------------------------------------------

  updatePill() {
    const count = this.shown().length;
    this.pill.textContent = `${plural(count, "memory", "memories")} ↗`;
    this.pill.setAttribute("aria-label", `${plural(count, "memory", "memories")}: open the Memory Panel`);
    this.pill.hidden = false;
  }

  render() {
    this.updatePill();
    if (this.editing) {
      this.stale = true; // drawn again when the editor closes
      return;
    }
    this.stale = false;
    const focused = this.describeFocus();
    const facts = this.shown();
    const counts = new Map();
    for (const fact of facts) counts.set(fact.category, (counts.get(fact.category) ?? 0) + 1);
    const names = this.orderedCategories(facts).filter((name) => counts.has(name));
    if (this.tab !== "all" && !counts.has(this.tab)) this.tab = "all";
    for (const id of this.selected) if (!facts.some((fact) => fact.id === id)) this.selected.delete(id);

    this.tabs.replaceChildren(
      this.tabButton("all", "All", facts.length),
      ...names.map((name) => this.tabButton(name, this.labelOf(name), counts.get(name))),
    );
    this.tabBar.hidden = facts.length === 0;
    this.showTabsBeyond();
    this.list.setAttribute("aria-labelledby", `mp-tab-${this.tab}`);
    if (facts.length === 0) {
      this.list.replaceChildren(
        el(
          "div",
          { class: "mp-empty" },
          illustration(),
          el("p", {}, "No memories yet."),
          el("p", {}, "I'll learn as we talk."),
        ),
      );
    } else {
      const groups = (this.tab === "all" ? names : [this.tab]).map((name) =>
        this.group(name, facts.filter((fact) => fact.category === name)),
      );
      this.list.replaceChildren(...groups);
    }
    this.moveSelect.replaceChildren(
      el("option", { value: "" }, "Move to…"),
      ...this.orderedCategories(facts).map((name) => el("option", { value: name }, this.labelOf(name))),
    );
    this.drawFooter(facts.length);
    this.restoreFocus(focused);
  }

  tabButton(name, label, count) {
    const chosen = this.tab === name;
    const tab = el(
      "button",
      {
        type: "button",
        role: "tab",
        id: `mp-tab-${name}`,
        class: "mp-tab",
        "data-category": name,
        "aria-selected": String(chosen),
        tabindex: chosen ? "0" : "-1",
        onclick: () => {
          this.tab = name;
          this.render();
          this.tabs.querySelector('[aria-selected="true"]')?.focus();
        },
      },
      label,
      el("span", { class: "mp-tab-count" }, String(count)),
    );
    if (name !== "all") this.colour(tab, name);
    return tab;
  }

  /** Marks the edges beyond which more tabs lie (the CSS fades them, shows an arrow). */
  showTabsBeyond() {
    const { scrollLeft, scrollWidth, clientWidth } = this.tabs;
    this.tabBar.classList.toggle("mp-more-before", scrollLeft > 1);
    this.tabBar.classList.toggle("mp-more-after", scrollLeft + clientWidth < scrollWidth - 1);
  }

  moveBetweenTabs(event) {
    const tabs = [...this.tabs.querySelectorAll('[role="tab"]')];
    const at = tabs.indexOf(document.activeElement);
    if (at < 0) return;
    const step = { ArrowRight: 1, ArrowLeft: -1, Home: -at, End: tabs.length - 1 - at }[event.key];
    if (step === undefined) return;
    event.preventDefault();
    tabs[(at + step + tabs.length) % tabs.length].click();
  }

  group(name, facts) {
    facts.sort((a, b) => Number(b.pinned) - Number(a.pinned)); // stable: newest first otherwise
    const heading = el(
      "h3",
      { class: "mp-sep", id: `mp-group-${name}` },
      el("span", { class: "mp-sep-dot", "aria-hidden": "true" }),
      this.labelOf(name),
      el("span", { class: "mp-sep-count" }, String(facts.length)),
    );
    const section = el(
      "section",
      { class: "mp-group", "data-category": name, "aria-labelledby": `mp-group-${name}` },
      heading,
      el("ul", { class: "mp-cards" }, ...facts.map((fact) => this.card(fact))),
    );
    this.colour(section, name);
    return section;
  }

  colour(node, category) {
    if (!KNOWN_COLOURS.has(category)) node.style.setProperty("--cat", hashedColour(category));
  }

  card(fact) {
    const text = el(
      "p",
      { class: "mp-text", tabindex: "0", role: "button", title: "Click to edit · double-click to rewrite" },
      fact.content,
    );
    text.addEventListener("click", (event) => this.onCardClick(event, fact));
    text.addEventListener("dblclick", () => this.onCardDoubleClick(fact));
    text.addEventListener("keydown", (event) => this.onCardKey(event, fact));
    const word = confidenceWord(fact.confidence);
    const fill = el("span", { class: "mp-fill" });
    fill.style.width = `${Math.round(Math.max(0, Math.min(1, fact.confidence)) * 100)}%`;
    const meter = el(
      "div",
      {
        class: "mp-meter",
        role: "meter",
        "aria-label": "Confidence",
        "aria-valuemin": "0",
        "aria-valuemax": "100",
        "aria-valuenow": String(Math.round(fact.confidence * 100)),
        "aria-valuetext": word,
        title: `Confidence: ${word}`,
      },
      fill,
    );
    const check = this.managing
      ? el("input", {
          type: "checkbox",
          class: "mp-check",
          "aria-label": `Select ${quoted(fact.content)}`,
          checked: this.selected.has(fact.id),
          onchange: (event) => this.select(fact.id, event.target.checked),
        })
      : null;
    const actions = el(
      "div",
      { class: "mp-actions" },
      el(
        "button",
        {
          type: "button",
          class: "mp-icon-button mp-pin",
          "aria-pressed": String(fact.pinned),
          "aria-label": fact.pinned ? "Unpin" : "Pin",
          title: fact.pinned ? "Unpin" : "Pin: always kept",
          onclick: () => this.pin(fact, !fact.pinned),
        },
        icon("pin"),
      ),
      el(
        "button",
        { type: "button", class: "mp-icon-button mp-expand", "aria-label": "Rewrite", title: "Rewrite", onclick: () => this.editFull(fact) },
        icon("edit"),
      ),
      el(
        "button",
        { type: "button", class: "mp-icon-button mp-delete", "aria-label": "Delete", title: "Delete", onclick: () => this.remove([fact.id]) },
        icon("delete"),
      ),
    );
    const card = el(
      "li",
      {
        class: `mp-card${fact.pinned ? " pinned" : ""}${this.selected.has(fact.id) ? " selected" : ""}`,
        "data-id": fact.id,
        "data-category": fact.category,
      },
      check,
      el("div", { class: "mp-main" }, text, meter, fact.pinned ? el("span", { class: "mp-sr" }, "Pinned") : null),
      this.managing ? null : actions,
    );
    this.colour(card, fact.category);
    return card;
  }

  drawFooter(count) {
    const confirming = !this.confirm.hidden;
    this.composer.hidden = this.managing;
    this.clearButton.hidden = this.managing || confirming || count === 0;
    this.bulk.hidden = !this.managing;
    this.manageButton.setAttribute("aria-pressed", String(this.managing));
    this.manageButton.hidden = count === 0 && !this.managing;
    this.selectedCount.textContent = `${this.selected.size} selected`;
    for (const button of this.bulkButtons) button.disabled = this.selected.size === 0;
    if (confirming && count === 0) this.cancelClear();
    else if (confirming) this.confirm.querySelector(".mp-confirm-text").textContent = this.clearQuestion(count);
  }

  clearQuestion(count) {
    return `This will remove all ${plural(count, "fact", "facts")}`;
  }

  /** What has focus, so that drawing again can give it back: a redraw (a fact learned
   * meanwhile) must not drop the focus of someone moving through the sheet by keyboard. */
  describeFocus() {
    const active = document.activeElement;
    if (!active) return null;
    if (this.tabs.contains(active)) return { tab: active.dataset.category };
    if (!this.list.contains(active)) return null;
    const card = active.closest(".mp-card");
    const selector = [...active.classList].map((c) => `.${c}`).join("");
    return card ? { id: card.dataset.id, selector } : { inList: true };
  }

  restoreFocus(focused) {
    if (!focused) return;
    if (focused.tab !== undefined) {
      const tab = [...this.tabs.querySelectorAll(".mp-tab")].find((t) => t.dataset.category === focused.tab);
      (tab ?? this.tabs.querySelector('[aria-selected="true"]'))?.focus();
      return;
    }
    const card = focused.id && this.cardOf(focused.id);
    const target = card && (card.querySelector(focused.selector || ".mp-text") ?? card.querySelector(".mp-text"));
    // A card shows its actions only while focus is within it: its text first, so the
    // action can take the focus. A fact gone meanwhile: the first card's text.
    card?.querySelector(".mp-text")?.focus();
    (target ?? this.list.querySelector(".mp-text") ?? this.sheet.querySelector(".mp-close"))?.focus();
  }

  pulse(id) {
    const card = this.cardOf(id);
    if (!card) return;
    card.classList.remove("mp-saved");
    void card.offsetWidth; // restart the animation
    card.classList.add("mp-saved");
    setTimeout(() => card.classList.remove("mp-saved"), PULSE_MS);
  }

  // -- tier 1 and 2: editing one fact ----------------------------------------

  onCardClick(event, fact) {
    if (this.managing) {
      this.select(fact.id, !this.selected.has(fact.id));
      return;
    }
    if (event.detail > 1) return; // the second click of a double click
    clearTimeout(this.clickTimer);
    this.clickTimer = setTimeout(() => this.editInline(fact), DOUBLE_CLICK_MS);
  }

  onCardDoubleClick(fact) {
    if (this.managing) return;
    clearTimeout(this.clickTimer);
    window.getSelection()?.removeAllRanges();
    this.editFull(fact);
  }

  onCardKey(event, fact) {
    if (event.target !== event.currentTarget) return;
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      if (this.managing) this.select(fact.id, !this.selected.has(fact.id));
      else if (event.shiftKey) this.editFull(fact);
      else this.editInline(fact);
    } else if ((event.key === "Delete" || event.key === "Backspace") && !this.managing) {
      event.preventDefault();
      this.remove([fact.id]);
    }
  }

  /** Tier 1: the text becomes a field; Enter (or leaving it) saves, Escape cancels. */
  editInline(fact) {
    const card = this.cardOf(fact.id);
    if (!card || this.editing) return;
    this.editing = fact.id;
    const input = el("input", { type: "text", class: "mp-inline", "aria-label": "Edit memory", maxlength: "65536" });
    input.value = fact.content;
    let done = false;
    const finish = (save) => {
      if (done) return;
      done = true;
      const content = input.value.trim();
      this.closeEditor(fact.id, save && content && content !== fact.content ? { content } : null);
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        finish(true);
      } else if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation(); // cancels the edit, not the sheet
        finish(false);
      }
    });
    input.addEventListener("blur", () => finish(true));
    // A slow double click lands on the field: it becomes the full editor, text kept.
    input.addEventListener("dblclick", () => {
      done = true;
      const draft = input.value;
      this.editing = null;
      this.editFull(fact, draft);
    });
    card.querySelector(".mp-text").replaceWith(input);
    card.classList.add("editing");
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  }

  /** Tier 2: the card opens into a textarea with a category selector. */
  editFull(fact, draft = fact.content) {
    const card = this.cardOf(fact.id);
    if (!card || (this.editing && this.editing !== fact.id)) return;
    this.editing = fact.id;
    const area = el("textarea", { class: "mp-area", "aria-label": "Memory", rows: "4", maxlength: "65536" });
    area.value = draft;
    const select = el(
      "select",
      { class: "mp-category", "aria-label": "Category" },
      ...this.orderedCategories([fact]).map((name) =>
        el("option", { value: name, selected: name === fact.category }, this.labelOf(name)),
      ),
    );
    const cancel = () => this.closeEditor(fact.id, null);
    const form = el(
      "form",
      { class: "mp-editor" },
      area,
      el(
        "div",
        { class: "mp-editor-row" },
        el("label", { class: "mp-category-label" }, "Category ", select),
        el("button", { type: "button", class: "mp-cancel", onclick: cancel }, "Cancel"),
        el("button", { type: "submit", class: "mp-save" }, "Save"),
      ),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const change = {};
      const content = area.value.trim();
      if (content && content !== fact.content) change.content = content;
      if (select.value !== fact.category) change.category = select.value;
      this.closeEditor(fact.id, Object.keys(change).length ? change : null);
    });
    form.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        cancel();
      } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    card.querySelector(".mp-main").replaceWith(form);
    card.querySelector(".mp-actions")?.remove();
    card.classList.add("editing", "expanded");
    area.focus();
    area.setSelectionRange(area.value.length, area.value.length);
  }

  /** Ends the open editor, saving ``change`` (a PATCH body) when there is one. */
  async closeEditor(id, change) {
    if (this.editing !== id) return;
    this.editing = null;
    this.render();
    this.cardOf(id)?.querySelector(".mp-text")?.focus();
    if (change) await this.save(id, change);
  }

  async save(id, change) {
    try {
      const fact = await api(`/memory/long-term/${id}`, {
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(change),
      });
      this.replace(fact);
      this.render();
      this.pulse(id);
      return true;
    } catch (error) {
      this.toast(`Not saved: ${error.message}`, { alert: true });
      return false;
    }
  }

  replace(fact) {
    const at = this.facts.findIndex((known) => known.id === fact.id);
    if (at >= 0) this.facts[at] = fact;
  }

  // -- pinning ----------------------------------------------------------------

  async pin(fact, pinned) {
    try {
      this.replace(await api(`/memory/long-term/${fact.id}`, {
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ pinned }),
      }));
      this.render();
      return true;
    } catch (error) {
      this.refusedPin(error);
      return false;
    }
  }

  /** The server's cap of pinned facts (10), told kindly rather than as an error. */
  refusedPin(error) {
    const cap = /at most (\d+) pinned/.exec(error.message);
    this.toast(
      cap
        ? `You can pin at most ${cap[1]} memories. Unpin one to pin this one.`
        : `Not pinned: ${error.message}`,
      { alert: true },
    );
  }

  // -- tier 3: Manage mode ----------------------------------------------------

  setManaging(on) {
    if (this.managing === on) return;
    this.managing = on;
    this.selected.clear();
    if (this.editing) this.closeEditor(this.editing, null);
    this.render();
    if (on) this.list.querySelector(".mp-check")?.focus();
  }

  select(id, on) {
    if (on) this.selected.add(id);
    else this.selected.delete(id);
    const card = this.cardOf(id);
    card?.classList.toggle("selected", on);
    const check = card?.querySelector(".mp-check");
    if (check) check.checked = on;
    this.drawFooter(this.shown().length);
  }

  selectAll() {
    const visible = [...this.list.querySelectorAll(".mp-card")].map((card) => card.dataset.id);
    const all = visible.every((id) => this.selected.has(id));
    for (const id of visible) this.select(id, !all);
  }

  async bulkPin(pinned) {
    const chosen = [...this.selected].map((id) => this.factOf(id)).filter((f) => f && f.pinned !== pinned);
    for (const fact of chosen) {
      if (!(await this.pin(fact, pinned))) break;
    }
  }

  async bulkMove() {
    const category = this.moveSelect.value;
    if (!category) return;
    const chosen = [...this.selected].filter((id) => this.factOf(id)?.category !== category);
    for (const id of chosen) {
      if (!(await this.save(id, { category }))) break;
    }
    this.moveSelect.value = "";
  }

  bulkDelete() {
    const chosen = [...this.selected];
    this.selected.clear();
    this.remove(chosen);
  }

  // -- deleting, with an undo -------------------------------------------------

  /** Hides the facts at once; their DELETE goes when the undo toast expires. */
  remove(ids) {
    if (ids.length === 0) return;
    const next = this.nextFocus(ids);
    for (const id of ids) this.hidden.add(id);
    const text = ids.length === 1
      ? `Deleted ${quoted(this.factOf(ids[0])?.content ?? "")}`
      : `Deleted ${plural(ids.length, "memory", "memories")}`;
    const pending = { ids };
    pending.toast = this.toast(text, {
      duration: delays.undo,
      undo: () => {
        this.pending.delete(pending);
        for (const id of ids) this.hidden.delete(id);
        this.render();
        this.cardOf(ids[0])?.querySelector(".mp-text")?.focus();
      },
      expire: () => this.commitDelete(pending),
    });
    this.pending.add(pending);
    this.render();
    const card = next ? this.cardOf(next) : null;
    if (card) card.querySelector(".mp-text").focus();
    else this.focusFallback();
  }

  async commitDelete(pending, keepalive = false) {
    if (!this.pending.delete(pending)) return;
    pending.toast.dismiss();
    await Promise.all(
      pending.ids.map(async (id) => {
        try {
          await api(`/memory/long-term/${id}`, { method: "DELETE", keepalive });
        } catch (error) {
          if (!/no such/.test(error.message)) this.toast(`Not deleted: ${error.message}`, { alert: true });
        }
      }),
    );
    this.facts = this.facts.filter((fact) => !pending.ids.includes(fact.id));
    for (const id of pending.ids) this.hidden.delete(id);
    this.render();
  }

  /** The card to focus once ``ids`` are gone: the next one shown, else the one before. */
  nextFocus(ids) {
    const cards = [...this.list.querySelectorAll(".mp-card")].map((card) => card.dataset.id);
    const at = cards.findIndex((id) => ids.includes(id));
    const rest = cards.filter((id) => !ids.includes(id));
    return rest[Math.min(Math.max(at, 0), rest.length - 1)];
  }

  focusFallback() {
    if (this.isOpen && !this.sheet.contains(document.activeElement)) {
      (this.managing ? this.manageButton : this.input).focus();
    }
  }

  // -- adding -----------------------------------------------------------------

  async rememberTyped(event) {
    event.preventDefault();
    const content = this.input.value.trim();
    if (!content) return;
    this.input.disabled = true;
    try {
      await this.store(content);
      this.input.value = "";
    } finally {
      this.input.disabled = false;
      this.input.focus();
    }
  }

  /** POSTs a fact without a category: the server classifies it. */
  async store(content) {
    if (this.clearing) await this.commitClear(); // the wipe must not take the new fact
    try {
      const changes = await api("/memory/long-term", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ content }),
      });
      const [fact] = [...changes.added, ...changes.updated];
      await this.refresh();
      if (fact) {
        const label = this.labelOf(fact.category);
        this.say(changes.added.length ? `Remembered under ${label}` : `Already remembered: reinforced`);
        if (this.tab !== "all" && this.tab !== fact.category) {
          this.tab = "all";
          this.render();
        }
        this.pulse(fact.id);
        this.cardOf(fact.id)?.scrollIntoView({ block: "nearest", behavior: reducedMotion() ? "auto" : "smooth" });
      }
      return fact;
    } catch (error) {
      this.say(`Not remembered: ${error.message}`, true);
      return null;
    }
  }

  /** The selected text of one AI reply (``.msg.assistant`` in the chat), else null. */
  selectedReplyText() {
    const selection = window.getSelection();
    if (!selection || selection.isCollapsed || selection.rangeCount === 0) return null;
    const range = selection.getRangeAt(0);
    const node = range.commonAncestorContainer;
    const reply = (node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement)?.closest(".msg.assistant");
    if (!reply || !reply.closest("#chat")) return null;
    const text = selection.toString().replace(/\s+/g, " ").trim();
    return text ? { text, rect: range.getBoundingClientRect() } : null;
  }

  placeRememberButton() {
    const found = this.isOpen ? null : this.selectedReplyText();
    if (!found) {
      this.hideRememberButton();
      return;
    }
    const button = this.rememberButton;
    button.hidden = false;
    const width = button.offsetWidth;
    const height = button.offsetHeight;
    const left = Math.min(
      Math.max(8, found.rect.left + found.rect.width / 2 - width / 2),
      window.innerWidth - width - 8,
    );
    const above = found.rect.top - height - 8;
    button.style.left = `${left}px`;
    button.style.top = `${above >= 8 ? above : found.rect.bottom + 8}px`;
  }

  hideRememberButton() {
    this.rememberButton.hidden = true;
  }

  async rememberSelection() {
    const found = this.selectedReplyText();
    this.hideRememberButton();
    if (!found) return;
    window.getSelection()?.removeAllRanges();
    await this.store(found.text);
  }

  // -- clearing everything ----------------------------------------------------

  confirmClear() {
    const count = this.shown().length;
    const cancel = el("button", { type: "button", class: "mp-confirm-cancel", onclick: () => this.cancelClear(true) }, "Cancel");
    this.confirm.replaceChildren(
      el("p", { class: "mp-confirm-text" }, this.clearQuestion(count)),
      el("p", { class: "mp-confirm-more" }, "Your archived conversations, notes and rules go with them."),
      el(
        "div",
        { class: "mp-confirm-row" },
        cancel,
        el("button", { type: "button", class: "mp-confirm-clear", onclick: () => this.clearAll() }, "Clear all"),
      ),
    );
    this.confirm.hidden = false;
    this.clearButton.hidden = true;
    cancel.focus();
  }

  cancelClear(refocus = false) {
    if (this.confirm.hidden) return;
    this.confirm.hidden = true;
    this.confirm.replaceChildren();
    this.drawFooter(this.shown().length);
    if (refocus) (this.clearButton.hidden ? this.input : this.clearButton).focus();
  }

  /** The view empties at once; the wipe waits behind a bar with an Undo. */
  clearAll() {
    this.cancelClear();
    const clearing = {};
    clearing.toast = this.toast("Memory cleared", {
      duration: delays.clear,
      persistent: true,
      undo: () => {
        this.clearing = null;
        this.render();
        this.input.focus();
      },
      expire: () => this.commitClear(),
    });
    this.clearing = clearing;
    this.render();
    clearing.toast.undoButton.focus();
  }

  async commitClear(keepalive = false) {
    const clearing = this.clearing;
    if (!clearing) return;
    clearing.toast.dismiss();
    try {
      await api("/memory/long-term", { method: "DELETE", keepalive });
      for (const pending of this.pending) pending.toast.dismiss();
      this.pending.clear();
      this.hidden.clear();
      this.facts = [];
    } catch (error) {
      this.toast(`Not cleared: ${error.message}`, { alert: true });
    }
    this.clearing = null;
    this.render();
    if (this.isOpen && !this.sheet.contains(document.activeElement)) this.input.focus();
  }

  commitEverything() {
    for (const pending of [...this.pending]) this.commitDelete(pending, true);
    this.commitClear(true);
  }

  // -- messages ---------------------------------------------------------------

  /**
   * A toast in the sheet. With ``undo`` it offers Undo for ``duration`` ms with a
   * countdown and a draining bar, then calls ``expire``; without, it just goes away.
   */
  toast(text, { duration = NOTICE_MS, undo = null, expire = null, alert = false, persistent = false } = {}) {
    if (!this.isOpen && !undo) {
      this.say(text, alert);
      return { dismiss() {} };
    }
    const seconds = el("span", { class: "mp-seconds" });
    const fill = el("span", { class: "mp-drain" });
    fill.style.animationDuration = `${duration}ms`;
    const node = el(
      "div",
      { class: `mp-toast${persistent ? " mp-bar" : ""}`, role: alert ? "alert" : null },
      el("span", { class: "mp-toast-text" }, text),
    );
    const started = performance.now();
    const tick = () => {
      seconds.textContent = `${Math.max(0, Math.ceil((duration - (performance.now() - started)) / 1000))}s`;
    };
    let timer = 0;
    let ticker = 0;
    const handle = {
      dismiss() {
        clearTimeout(timer);
        clearInterval(ticker);
        node.remove();
      },
    };
    if (undo) {
      handle.undoButton = el(
        "button",
        {
          type: "button",
          class: "mp-undo",
          onclick: () => {
            handle.dismiss();
            undo();
          },
        },
        "Undo",
      );
      node.append(handle.undoButton, seconds, el("span", { class: "mp-progress", "aria-hidden": "true" }, fill));
      tick();
      ticker = setInterval(tick, 250);
    }
    timer = setTimeout(() => {
      handle.dismiss();
      expire?.();
    }, duration);
    this.toasts.append(node);
    return handle;
  }

  /** A short message beside the page (the sheet may be closed): for the Remember action. */
  say(text, alert = false) {
    if (this.isOpen) {
      this.toast(text, { alert });
      return;
    }
    this.notice.textContent = text;
    this.notice.setAttribute("role", alert ? "alert" : "status");
    this.notice.hidden = false;
    clearTimeout(this.noticeTimer);
    this.noticeTimer = setTimeout(() => {
      this.notice.hidden = true;
    }, NOTICE_MS);
  }
}

/** Builds the panel in ``root`` and shows the header's pill; returns the panel. */
export function mountPanel(root = document.getElementById("memory-panel-root")) {
  const panel = new MemoryPanel(root, document.getElementById("memory-pill"));
  panel.refresh();
  return panel;
}
