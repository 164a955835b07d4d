// Building the page from data without ever parsing data as HTML: every string becomes a
// text node or an attribute value; no innerHTML anywhere.

/** An element: h("a", {href: "#/runs", class: "x", onclick: fn}, "text", child, [more]). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Append children (nodes, strings, numbers, nested arrays; null and false skipped). */
export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A link only for http(s) addresses (never javascript: or data:); else the text. */
export function safeLink(url, text, attrs = {}) {
  if (typeof url === "string" && /^https?:\/\//i.test(url)) {
    return h("a", { ...attrs, href: url, target: "_blank", rel: "noopener noreferrer" }, text);
  }
  return h("span", attrs, text);
}

export function money(usd) {
  const value = Number(usd) || 0;
  return `$${value < 1 ? value.toFixed(4) : value.toFixed(2)}`;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) return "–";
  const s = Math.max(0, seconds);
  if (s < 10) return `${s.toFixed(1)}s`;
  if (s < 60) return `${Math.round(s)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(Math.round(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

export function clock(epoch) {
  return new Date(epoch * 1000).toLocaleTimeString([], { hour12: false });
}

export function when(epoch) {
  const date = new Date(epoch * 1000);
  const today = new Date().toDateString() === date.toDateString();
  return today ? clock(epoch) : date.toLocaleString([], { hour12: false });
}

export function badge(status) {
  return h("span", { class: `badge status-${status}` }, status);
}

export function empty(text) {
  return h("p", { class: "empty" }, text);
}

/** A table: columns is [[heading, row => cell content], ...]. */
export function table(columns, rows, rowAttrs = () => ({})) {
  return h(
    "table",
    {},
    h("thead", {}, h("tr", {}, columns.map(([heading]) => h("th", { scope: "col" }, heading)))),
    h("tbody", {}, rows.map((row) => h("tr", rowAttrs(row), columns.map(([, cell]) => h("td", {}, cell(row)))))),
  );
}

/** Stop after `seconds`, or earlier when `signal` aborts. */
export function pause(seconds, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, seconds * 1000);
    signal?.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

/** Show a line in the banner under the top bar (an empty text hides it). */
export function notify(text) {
  const banner = document.getElementById("banner");
  banner.textContent = text || "";
  banner.hidden = !text;
}

/** A size in bytes as a person reads it. */
export function bytes(value) {
  if (value === null || value === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = Number(value);
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) { size /= 1024; unit += 1; }
  return `${size % 1 ? size.toFixed(1) : size} ${units[unit]}`;
}
