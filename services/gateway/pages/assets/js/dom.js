// Building elements from data, never from HTML strings: nothing a server or a player wrote can
// become markup or script.

/** An element: h("button", {class: "card", dataset: {card: "QH"}, onclick}, "Q♥"). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "dataset") {
      for (const [key, data] of Object.entries(value)) {
        if (data !== undefined && data !== null && data !== false) element.dataset[key] = data === true ? "" : String(data);
      }
    } else if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      element.className = Array.isArray(value) ? value.filter(Boolean).join(" ") : value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : String(child));
  }
}

/** Replace what `element` holds, keeping the keyboard focus on the same control if it is
 * drawn again (a control is known by its id or its data-card / data-bid / data-action). */
export function replaceChildren(element, ...children) {
  const focused = document.activeElement;
  const key = focused && element.contains(focused) ? focusKey(focused) : null;
  element.replaceChildren();
  append(element, children);
  if (key) {
    const again = element.querySelector(key);
    if (again) again.focus();
    else if (element.hasAttribute("tabindex")) element.focus(); // not lost to the page's start
  }
}

function focusKey(element) {
  if (element.id) return `#${CSS.escape(element.id)}`;
  for (const name of ["card", "bid", "action", "trick", "step"]) {
    if (element.dataset[name] !== undefined) {
      return `[data-${name}="${CSS.escape(element.dataset[name])}"]`;
    }
  }
  return null;
}

/** Say `text` to screen readers (and show it) in the live region `element`. */
export function announce(element, text) {
  element.textContent = text;
}

export function byId(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element;
}
