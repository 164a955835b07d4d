// The API with the user's key: JSON calls, and a run's events as server-sent events read
// with fetch() (EventSource cannot send an Authorization header). The key lives in this
// tab's sessionStorage only, and only ever travels in the Authorization header.

const KEY = "golem.apiKey";

export const session = {
  get key() { return sessionStorage.getItem(KEY); },
  save(key) { sessionStorage.setItem(KEY, key); },
  forget() { sessionStorage.removeItem(KEY); },
};

/** An answer other than 2xx: its status and the problem's detail. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

let unauthorized = () => {};

/** What to do when the server stops accepting the key (401). */
export function onUnauthorized(handler) { unauthorized = handler; }

function headers(key, extra = {}) {
  return { Authorization: `Bearer ${key}`, ...extra };
}

async function failure(response) {
  let detail = `${response.status} ${response.statusText}`;
  try {
    const problem = await response.json();
    if (typeof problem.detail === "string") detail = problem.detail;
  } catch { /* not JSON: keep the status line */ }
  return new ApiError(response.status, detail);
}

/** Call the API; the parsed JSON answer (null for 204). `key` overrides the saved key. */
export async function api(path, { method = "GET", body, signal, key } = {}) {
  const extra = { Accept: "application/json" };
  if (body !== undefined) extra["Content-Type"] = "application/json";
  const response = await send(path, key ?? session.key ?? "", extra, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  }, key === undefined);
  return response.status === 204 ? null : response.json();
}

/**
 * fetch() with the key in its header only (no cookies, no referrer, no cache); a failure
 * throws the server's problem, and a 401 signs out when `signOut` says so.
 */
async function send(path, key, extra, init, signOut) {
  const response = await fetch(path, {
    ...init,
    headers: headers(key, extra),
    cache: "no-store",
    credentials: "omit",
    referrerPolicy: "no-referrer",
  });
  if (!response.ok) {
    const error = await failure(response);
    if (response.status === 401 && signOut) unauthorized(error.detail);
    throw error;
  }
  return response;
}

/**
 * Read a server-sent event stream until the server ends it. `onEvent({id, type, data})`
 * gets each event (data parsed as JSON); `lastId` resumes after that event (Last-Event-ID);
 * `onOpen()` is called once the server has accepted the request.
 */
export async function follow(path, { lastId = null, signal, onEvent, onOpen = () => {} }) {
  const extra = { Accept: "text/event-stream" };
  if (lastId !== null) extra["Last-Event-ID"] = String(lastId);
  const response = await send(path, session.key ?? "", extra, { signal }, true);
  onOpen();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new EventParser(onEvent);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    parser.feed(value);
  }
}

/** The text/event-stream format: lines of field: value, an empty line ends an event. */
class EventParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buffer = "";
    this.id = null;
    this.type = "";
    this.data = [];
  }

  feed(text) {
    this.buffer += text;
    for (;;) {
      const end = this.buffer.search(/[\r\n]/);
      if (end < 0) return;
      if (this.buffer[end] === "\r" && end === this.buffer.length - 1) return; // \r\n split?
      const crlf = this.buffer[end] === "\r" && this.buffer[end + 1] === "\n";
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + (crlf ? 2 : 1));
      this.line(line);
    }
  }

  line(line) {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return; // a comment: the server's keep-alive ping
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "id") this.id = value;
    else if (field === "event") this.type = value;
    else if (field === "data") this.data.push(value);
  }

  dispatch() {
    const data = this.data.join("\n");
    const type = this.type || "message";
    this.data = [];
    this.type = "";
    if (!data) return;
    let parsed;
    try { parsed = JSON.parse(data); } catch { parsed = { text: data }; }
    this.onEvent({ id: this.id === null ? null : Number(this.id), type, data: parsed });
  }
}
