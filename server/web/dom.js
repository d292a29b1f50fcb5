// Building the page's elements: text is only ever set as text, never parsed as HTML.

/** A new element with attributes and text. */
export function element(tag, attributes = {}, text = "") {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text) node.textContent = text;
  return node;
}
