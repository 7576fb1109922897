// resourcekit explorer: a plain-JavaScript MCP client of this page's own /mcp endpoint.
// No framework, no build step, nothing fetched from elsewhere.
"use strict";

const HANDSHAKE = "2025-11-25";
const MODERN = "2026-07-28";
const META_PROTOCOL = "io.modelcontextprotocol/protocolVersion";
const META_CAPS = "io.modelcontextprotocol/clientCapabilities";
const META_VERSION = "io.resourcekit/version";
const META_VARIABLES = "io.resourcekit/variables";
const CLIENT_CAPS = { experimental: { "io.resourcekit/sep-2093": {} } };
const CLIENT_INFO = { name: "resourcekit-explorer", version: "1" };
const ENDPOINT = "/mcp";
const MAX_LOG = 1000;
const CHUNK = 1000; // rows drawn at a time

// --- small helpers ------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const $ = (selector) => document.querySelector(selector);

function formatBytes(n) {
  if (n === undefined || n === null) return "";
  if (n < 1024) return `${n} B`;
  const units = ["KB", "MB", "GB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

function count(n) { return n.toLocaleString("en-US"); }

function utf8Length(text) { return new TextEncoder().encode(text).length; }

function base64Bytes(b64) {
  const raw = atob(b64);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

function debounce(fn, ms) {
  let timer = null;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class RpcError extends Error {
  constructor(error) {
    super(error.message || "error");
    this.code = error.code;
    this.data = error.data;
  }
}

class Disconnected extends Error {}

// --- SSE over fetch (EventSource cannot send headers) -------------------------------------

async function* sseMessages(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split("\n").filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (data.trim()) yield JSON.parse(data);
      }
    }
  } finally {
    reader.releaseLock();
  }
}

// --- the MCP client -----------------------------------------------------------------------

function nameHeader(uri) {
  if (/^[\x20-\x7e]*$/.test(uri)) return uri;
  const bytes = new TextEncoder().encode(uri);
  let raw = "";
  for (const b of bytes) raw += String.fromCharCode(b);
  return `=?base64?${btoa(raw)}?=`;
}

class Client {
  constructor(hooks) {
    this.hooks = hooks; // log(direction, message), notification(message), state(name, detail), reconnected()
    this.era = HANDSHAKE;
    this.sessionId = null;
    this.negotiated = null;
    this.nextId = 0;
    this.generation = 0;
    this.subscribed = new Set();
    this.listenAbort = null;
    this.reconnecting = null;
    this.server = null;
    this.pending = new Map(); // id -> {method, started} of requests awaiting their response
  }

  async connect(era) {
    this.generation++;
    this.stopStreams();
    this.endSession();
    this.era = era;
    this.sessionId = null;
    this.negotiated = null;
    const generation = this.generation;
    if (era === HANDSHAKE) {
      const result = await this.send({ jsonrpc: "2.0", id: ++this.nextId, method: "initialize",
        params: { protocolVersion: HANDSHAKE, capabilities: CLIENT_CAPS, clientInfo: CLIENT_INFO } });
      this.negotiated = result.protocolVersion;
      this.server = result;
      await this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      for (const uri of this.subscribed) { // subscribed before a reconnect: again in this session
        await this.request("resources/subscribe", { uri }, undefined, false).catch((error) => {
          if (!(error instanceof RpcError)) throw error;
          this.subscribed.delete(uri);
        });
      }
      this.runGetStream(generation);
    } else {
      this.server = await this.request("server/discover", {}, undefined, false);
      this.runListen(generation);
    }
    this.hooks.state("connected");
    return this.server;
  }

  // a handshake-era session the page leaves (switching era, closing the tab) is ended at once
  endSession() {
    if (this.era !== HANDSHAKE || !this.sessionId) return;
    const headers = { "mcp-session-id": this.sessionId };
    if (this.negotiated) headers["mcp-protocol-version"] = this.negotiated;
    fetch(ENDPOINT, { method: "DELETE", headers, keepalive: true }).catch(() => {});
    this.sessionId = null;
  }

  headers(message) {
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    if (this.era === HANDSHAKE) {
      if (this.sessionId) headers["mcp-session-id"] = this.sessionId;
      if (this.negotiated) headers["mcp-protocol-version"] = this.negotiated;
    } else {
      headers["mcp-protocol-version"] = MODERN;
      if ("id" in message) headers["mcp-method"] = message.method;
      if (message.method === "resources/read") headers["mcp-name"] = nameHeader(message.params.uri);
    }
    return headers;
  }

  // `retry`: once the server is back, send again what failed because it went away (not while
  // connecting: reconnect() itself connects)
  async request(method, params, signal, retry = true) {
    params = { ...(params || {}) };
    if (this.era === MODERN) {
      params._meta = { ...(params._meta || {}), [META_PROTOCOL]: MODERN, [META_CAPS]: CLIENT_CAPS };
    }
    const message = { jsonrpc: "2.0", id: ++this.nextId, method, params };
    try {
      return await this.send(message, signal);
    } catch (error) {
      if (!retry || !(error instanceof Disconnected) || (signal && signal.aborted)) throw error;
      await this.reconnect();
      return this.send({ ...message, id: ++this.nextId }, signal);
    }
  }

  // one POST; the answer comes as JSON or as an SSE stream (notifications may precede it)
  async send(message, signal) {
    this.hooks.log("out", message);
    if ("id" in message) this.pending.set(message.id, { method: message.method, started: performance.now() });
    try {
      return await this.post(message, signal);
    } finally {
      this.pending.delete(message.id);
    }
  }

  received(message) {
    const request = "id" in message && !message.method ? this.pending.get(message.id) : undefined;
    this.hooks.log("in", message, request && { method: request.method, ms: performance.now() - request.started });
  }

  async post(message, signal) {
    let response;
    try {
      response = await fetch(ENDPOINT, { method: "POST", headers: this.headers(message),
        body: JSON.stringify(message), signal });
    } catch (error) {
      if (signal && signal.aborted) throw error;
      throw new Disconnected(String(error));
    }
    if (response.status === 404 && this.era === HANDSHAKE && message.method !== "initialize") {
      throw new Disconnected("session not found");
    }
    if (message.method === "initialize") this.sessionId = response.headers.get("mcp-session-id");
    if (!("id" in message)) return null;
    const type = response.headers.get("content-type") || "";
    if (type.startsWith("text/event-stream")) {
      for await (const incoming of sseMessages(response)) {
        this.received(incoming);
        if (incoming.id === message.id && ("result" in incoming || "error" in incoming)) {
          if (incoming.error) throw new RpcError(incoming.error);
          return incoming.result;
        }
        if (incoming.method) this.hooks.notification(incoming);
      }
      throw new Disconnected("the stream ended before the response");
    }
    let body = null;
    try { body = await response.json(); } catch (_) { /* not JSON */ }
    if (body) this.received(body);
    if (response.status >= 500 && !(body && body.error)) throw new Disconnected(`HTTP ${response.status}`);
    if (body && body.error) throw new RpcError(body.error);
    if (!body || !("result" in body)) throw new RpcError({ code: response.status, message: `HTTP ${response.status}` });
    return body.result;
  }

  // handshake era: notifications arrive on the session's GET stream
  async runGetStream(generation) {
    while (generation === this.generation) {
      let response;
      try {
        this.listenAbort = new AbortController();
        response = await fetch(ENDPOINT, { method: "GET", signal: this.listenAbort.signal, headers: {
          accept: "text/event-stream", "mcp-session-id": this.sessionId, "mcp-protocol-version": this.negotiated } });
        if (response.status === 404) throw new Disconnected("session not found");
        if (!response.ok) throw new Disconnected(`HTTP ${response.status}`);
        for await (const message of sseMessages(response)) {
          this.hooks.log("in", message);
          if (message.method) this.hooks.notification(message);
        }
      } catch (error) {
        if (generation !== this.generation) return;
        this.reconnect();
        return;
      }
      await sleep(100); // the stream reached its lifetime: open the next one
    }
  }

  // 2026-07-28: one subscriptions/listen stream names every subscribed URI; re-sent when they change
  async runListen(generation) {
    while (generation === this.generation) {
      const abort = new AbortController();
      this.listenAbort = abort;
      const notifications = { resourcesListChanged: true };
      if (this.subscribed.size) notifications.resourceSubscriptions = [...this.subscribed];
      try {
        await this.send({ jsonrpc: "2.0", id: ++this.nextId, method: "subscriptions/listen",
          params: { notifications, _meta: { [META_PROTOCOL]: MODERN, [META_CAPS]: CLIENT_CAPS } } }, abort.signal);
      } catch (error) {
        if (generation !== this.generation) return;
        if (abort.signal.aborted) continue; // the subscriptions changed: listen anew
        if (error instanceof RpcError) { // e.g. a subscribed resource is gone: listen without it
          this.hooks.state("error", `subscriptions/listen: ${error.message}`);
          const gone = error.data && error.data.uri;
          if (gone && this.subscribed.has(gone)) this.subscribed.delete(gone);
          else this.subscribed.clear();
          await sleep(500);
          this.hooks.state("connected");
          continue;
        }
        this.reconnect();
        return;
      }
      await sleep(50); // the stream reached its lifetime, with its result: listen anew
    }
  }

  stopStreams() {
    if (this.listenAbort) this.listenAbort.abort();
    this.listenAbort = null;
  }

  async subscribe(uri) {
    this.subscribed.add(uri);
    if (this.era === HANDSHAKE) await this.request("resources/subscribe", { uri });
    else this.stopStreams(); // runListen starts again with the new list
  }

  async unsubscribe(uri) {
    this.subscribed.delete(uri);
    if (this.era === HANDSHAKE) await this.request("resources/unsubscribe", { uri });
    else this.stopStreams();
  }

  // the server went away (restarted by --reload, stopped): wait for it, then start afresh
  reconnect() {
    if (!this.reconnecting) {
      this.reconnecting = (async () => {
        this.generation++;
        this.stopStreams();
        this.hooks.state("reconnecting");
        for (let delay = 200; ; delay = Math.min(delay * 1.5, 2000)) {
          await sleep(delay);
          try {
            const health = await fetch("/healthz", { cache: "no-store" });
            if (!health.ok) continue;
            await this.connect(this.era);
            break;
          } catch (_) { /* not back yet */ }
        }
        this.reconnecting = null;
        this.hooks.reconnected();
      })();
    }
    return this.reconnecting;
  }
}

// --- RFC 6570: expansion for the template form, matching to group listed instances -------

const OPERATORS = {
  "": { first: "", sep: ",", named: false, empty: "", reserved: false },
  "+": { first: "", sep: ",", named: false, empty: "", reserved: true },
  "#": { first: "#", sep: ",", named: false, empty: "", reserved: true },
  ".": { first: ".", sep: ".", named: false, empty: "", reserved: false },
  "/": { first: "/", sep: "/", named: false, empty: "", reserved: false },
  ";": { first: ";", sep: ";", named: true, empty: "", reserved: false },
  "?": { first: "?", sep: "&", named: true, empty: "=", reserved: false },
  "&": { first: "&", sep: "&", named: true, empty: "=", reserved: false },
};

function encodeValue(value, reserved) {
  if (reserved) return encodeURI(value).replace(/%25([0-9A-Fa-f]{2})/g, "%$1");
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

function parseExpression(expression) {
  let op = "";
  if ("+#./;?&".includes(expression[0])) { op = expression[0]; expression = expression.slice(1); }
  const variables = expression.split(",").map((spec) => {
    const explode = spec.endsWith("*");
    if (explode) spec = spec.slice(0, -1);
    const prefix = spec.match(/^(.*):(\d+)$/);
    return { name: prefix ? prefix[1] : spec, explode, prefix: prefix ? Number(prefix[2]) : null };
  });
  return { op, variables };
}

function templateVariables(template) {
  const names = [];
  for (const match of template.matchAll(/\{([^}]+)\}/g)) {
    const { op, variables } = parseExpression(match[1]);
    for (const v of variables) names.push({ ...v, op });
  }
  return names;
}

function expandTemplate(template, values) {
  return template.replace(/\{([^}]+)\}/g, (_, expression) => {
    const { op, variables } = parseExpression(expression);
    const o = OPERATORS[op];
    const parts = [];
    for (const { name, explode, prefix } of variables) {
      const value = values[name];
      if (value === undefined || value === null) continue;
      if (Array.isArray(value)) {
        if (!value.length) continue;
        const items = value.map((v) => encodeValue(String(v), o.reserved));
        if (explode) parts.push(items.map((v) => (o.named ? `${name}=${v}` : v)).join(o.sep));
        else parts.push((o.named ? `${name}=` : "") + items.join(","));
      } else {
        let text = String(value);
        if (prefix) text = text.slice(0, prefix);
        if (o.named) parts.push(text === "" ? name + o.empty : `${name}=${encodeValue(text, o.reserved)}`);
        else parts.push(encodeValue(text, o.reserved));
      }
    }
    return parts.length ? o.first + parts.join(o.sep) : "";
  });
}

const MATCHERS = {
  "": "[^/?#]+", "+": "[^?#]*?", "#": "(?:#.*)?", ".": "(?:\\.[^/?#]*)?", "/": "(?:/[^?#]*)?",
  ";": "(?:;[^/?#]*)?", "?": "(?:\\?.*)?", "&": "(?:&.*)?",
};

// a template's URIs, with a group for each simple variable ({x}, {+x}) whose value the types can check
function templateMatcher(template) {
  let pattern = "";
  let last = 0;
  const names = [];
  for (const match of template.matchAll(/\{([^}]+)\}/g)) {
    pattern += template.slice(last, match.index).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const { op, variables } = parseExpression(match[1]);
    if ((op === "" || op === "+") && variables.length === 1 && !variables[0].explode) {
      names.push(variables[0].name);
      pattern += `(${MATCHERS[op]})`;
    } else {
      pattern += MATCHERS[op];
    }
    last = match.index + match[0].length;
  }
  pattern += template.slice(last).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  try { return { regex: new RegExp(`^${pattern}$`), names }; } catch (_) { return null; }
}

const FORMATS = {
  uuid: /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
  "date-time": /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/,
};

// would the server's convertor take this value for a variable of this schema (the template's _meta)?
function valueFits(value, schema) {
  if (!schema) return true;
  if (schema.enum) return schema.enum.map(String).includes(value);
  if (schema.type === "integer") return /^[+-]?\d+$/.test(value);
  if (schema.type === "number") return /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(value);
  if (schema.type === "boolean") return /^(true|false|1|0|yes|no|on|off)$/i.test(value);
  if (schema.format && FORMATS[schema.format]) return FORMATS[schema.format].test(value);
  return true;
}

function matchesTemplate(template, uri) {
  const found = template.matcher && template.matcher.regex.exec(uri);
  if (!found) return false;
  const schemas = (template._meta && template._meta[META_VARIABLES]) || {};
  return template.matcher.names.every((name, i) => {
    let value = found[i + 1];
    try { value = decodeURIComponent(value); } catch (_) { return false; }
    return valueFits(value, schemas[name]);
  });
}

// --- rendering contents --------------------------------------------------------------------

function renderLines(text) {
  const code = h("code", { class: "lines" });
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  const fragment = document.createDocumentFragment();
  for (const line of lines) fragment.append(h("span", { class: "line" }, line), "\n");
  code.append(fragment);
  return h("pre", { class: "code" }, code);
}

function renderJson(value, key, depth = 0) {
  const label = key === undefined ? null : h("span", { class: "json-key" }, JSON.stringify(key), ": ");
  if (value === null || typeof value !== "object") {
    const kind = value === null ? "null" : typeof value;
    return h("div", { class: "json-row" }, label, h("span", { class: `json-${kind}` }, JSON.stringify(value)));
  }
  const isArray = Array.isArray(value);
  const entries = isArray ? value.map((v, i) => [undefined, v, i]) : Object.entries(value).map(([k, v]) => [k, v]);
  const [open, close] = isArray ? ["[", "]"] : ["{", "}"];
  if (!entries.length) return h("div", { class: "json-row" }, label, open + close);
  const summary = h("summary", {}, label, open,
    h("span", { class: "json-count" }, ` ${entries.length} ${isArray ? "items" : "keys"} `), h("span", { class: "json-close" }, close));
  const details = h("details", { class: "json-node", open: depth < 3 }, summary);
  const body = h("div", { class: "json-children" });
  for (const [k, v] of entries) body.append(renderJson(v, k, depth + 1));
  details.append(body, h("div", { class: "json-row json-end" }, close));
  return details;
}

// Markdown: a small renderer over escaped text (nothing of the source becomes HTML)
function renderMarkdown(source) {
  const root = h("div", { class: "markdown" });
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  if (lines[0] === "---") {
    const end = lines.indexOf("---", 1);
    if (end > 0) {
      root.append(h("pre", { class: "frontmatter" }, lines.slice(1, end).join("\n")));
      i = end + 1;
    }
  }
  let paragraph = [];
  const flush = () => {
    if (paragraph.length) root.append(inline(h("p"), paragraph.join(" ")));
    paragraph = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)/);
    if (fence) {
      flush();
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) body.push(lines[i]);
      i++;
      root.append(h("pre", { class: "md-code" }, h("code", {}, body.join("\n"))));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*?)\s*#*\s*$/);
    if (heading) { flush(); root.append(inline(h(`h${heading[1].length}`), heading[2])); i++; continue; }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); root.append(h("hr")); i++; continue; }
    if (/^\s*>/.test(line)) {
      flush();
      const quoted = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i++) quoted.push(lines[i].replace(/^\s*>\s?/, ""));
      const block = renderMarkdown(quoted.join("\n"));
      root.append(h("blockquote", {}, ...block.childNodes));
      continue;
    }
    const item = line.match(/^(\s*)([-*+]|\d+[.)])\s+(.*)$/);
    if (item) {
      flush();
      const ordered = /\d/.test(item[2]);
      const list = h(ordered ? "ol" : "ul");
      for (; i < lines.length; i++) {
        const next = lines[i].match(/^(\s*)([-*+]|\d+[.)])\s+(.*)$/);
        if (!next) {
          if (lines[i].trim() && /^\s{2,}/.test(lines[i]) && list.lastChild) {
            inline(list.lastChild, " " + lines[i].trim());
            continue;
          }
          break;
        }
        const task = next[3].match(/^\[([ xX])\]\s+(.*)$/);
        const li = h("li");
        if (task) li.append(h("input", { type: "checkbox", disabled: true, checked: task[1] !== " " }), " ");
        list.append(inline(li, task ? task[2] : next[3]));
      }
      root.append(list);
      continue;
    }
    if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|?[\s:-]+\|[\s|:-]*$/.test(lines[i + 1])) {
      flush();
      const cells = (row) => row.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());
      const table = h("table");
      const head = h("tr");
      for (const c of cells(line)) head.append(inline(h("th"), c));
      table.append(h("thead", {}, head));
      const body = h("tbody");
      for (i += 2; i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i]); i++) {
        const row = h("tr");
        for (const c of cells(lines[i])) row.append(inline(h("td"), c));
        body.append(row);
      }
      table.append(body);
      root.append(table);
      continue;
    }
    if (!line.trim()) { flush(); i++; continue; }
    paragraph.push(line.trim());
    i++;
  }
  flush();
  return root;
}

// inline Markdown into `el`: code, bold, italic, links (http, https, mailto only); text nodes only
function inline(el, text) {
  const pattern = /(`+)(.+?)\1|\*\*(.+?)\*\*|__(.+?)__|\*(.+?)\*|_(.+?)_|!?\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)|(https?:\/\/[^\s<>()]+)/g;
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    el.append(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[2] !== undefined) el.append(h("code", {}, m[2]));
    else if (m[3] !== undefined || m[4] !== undefined) el.append(inline(h("strong"), m[3] ?? m[4]));
    else if (m[5] !== undefined || m[6] !== undefined) el.append(inline(h("em"), m[5] ?? m[6]));
    else if (m[8] !== undefined) {
      const safe = /^(https?:|mailto:)/i.test(m[8]);
      if (safe) el.append(h("a", { href: m[8], target: "_blank", rel: "noopener noreferrer" }, m[7] || m[8]));
      else el.append(h("span", { class: "md-link", title: m[8] }, m[7] || m[8]));
    } else if (m[9] !== undefined) el.append(h("a", { href: m[9], target: "_blank", rel: "noopener noreferrer" }, m[9]));
  }
  el.append(text.slice(last));
  return el;
}

// object URLs of the contents on screen, released when other contents replace them
let blobUrls = [];
function blobUrl(bytes, type) {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  blobUrls.push(url);
  return url;
}
function releaseBlobs() {
  for (const url of blobUrls) URL.revokeObjectURL(url);
  blobUrls = [];
}

function isJsonType(mime) { return /^application\/(.+\+)?json$/.test(mime || "") || /\+json$/.test(mime || ""); }
function isMarkdownType(mime, uri) { return /markdown/.test(mime || "") || /\.(md|markdown)$/i.test(uri || ""); }

// one content of a read result: its header, view switch and body
function renderContent(content, fallbackMime) {
  const mime = content.mimeType || fallbackMime || (content.blob !== undefined ? "application/octet-stream" : "text/plain");
  const card = h("article", { class: "content", dataset: { uri: content.uri || "" } });
  const size = content.text !== undefined ? utf8Length(content.text) : base64Bytes(content.blob || "").length;
  const header = h("header", { class: "content-head" },
    h("span", { class: "mime" }, mime), h("span", { class: "muted" }, formatBytes(size)));
  card.append(header);
  const body = h("div", { class: "content-body" });
  card.append(body);
  const views = [];
  if (content.text !== undefined) {
    let parsed;
    if (isJsonType(mime)) {
      try { parsed = JSON.parse(content.text); } catch (_) { parsed = undefined; }
    }
    if (parsed !== undefined) views.push(["Tree", () => h("div", { class: "json" }, renderJson(parsed))]);
    if (isMarkdownType(mime, content.uri)) views.push(["Rendered", () => renderMarkdown(content.text)]);
    if (parsed !== undefined) views.push(["Pretty", () => renderLines(JSON.stringify(parsed, null, 2))]);
    views.push(["Source", () => renderLines(content.text)]);
  } else {
    const bytes = base64Bytes(content.blob || "");
    // the download is opaque bytes whatever the mimeType: opened in a tab it downloads, never renders
    const url = blobUrl(bytes, "application/octet-stream");
    const shown = mime.startsWith("image/") ? blobUrl(bytes, mime) : null;
    if (shown) {
      views.push(["Image", () => {
        const img = h("img", { src: shown, alt: content.uri || "image" });
        img.addEventListener("load", () => {
          if (!header.querySelector(".dimensions")) {
            header.children[1].after(h("span", { class: "muted dimensions" }, `${img.naturalWidth} × ${img.naturalHeight} px`));
          }
        });
        return h("div", { class: "image" }, img);
      }]);
    }
    const name = (content.uri || "resource").split(/[/:]/).filter(Boolean).pop() || "resource";
    views.push(["Download", () => h("div", { class: "download" },
      h("a", { class: "btn primary", href: url, download: name }, `Download ${name}`),
      h("span", { class: "muted" }, ` ${formatBytes(bytes.length)} of ${mime}`))]);
  }
  const switcher = h("div", { class: "segmented small" });
  const show = (index) => {
    body.replaceChildren(views[index][1]());
    [...switcher.children].forEach((b, j) => b.classList.toggle("active", j === index));
  };
  views.forEach(([label], index) => switcher.append(h("button", { type: "button", onclick: () => show(index) }, label)));
  if (views.length > 1) header.append(switcher);
  show(0);
  return card;
}

// --- the page --------------------------------------------------------------------------------

const state = {
  era: localStorage.getItem("rk-era") === MODERN ? MODERN : HANDSHAKE,
  tab: "resources",
  mode: localStorage.getItem("rk-mode") || "tree",
  filter: "",
  resources: [],
  byUri: new Map(),
  cursor: undefined, // undefined: nothing loaded; null: every page loaded
  loading: null,
  templates: [],
  skills: [],
  selected: null, // {kind: "resource" | "template" | "directory", key}
  logCount: 0,
  drawn: 0, // rows of the flat view drawn so far
};

const client = new Client({
  log: logMessage,
  notification: onNotification,
  state: setStatus,
  reconnected: () => { refreshAll(); },
});

function logLine(text) {
  const log = $("#protocol-log");
  log.append(h("li", { class: "msg line", dataset: { method: "" } }, h("span", {}, text)));
}

function setStatus(name, detail) {
  const previous = $("#status").dataset.state;
  if (name === "connected" && (previous === "connecting" || previous === "reconnecting")) {
    logLine(client.era === HANDSHAKE ? `session ${(client.sessionId || "").slice(0, 8)}… opened (${client.negotiated})`
      : "stateless 2026-07-28: every request stands alone");
  } else if (name === "reconnecting" && previous !== "reconnecting") {
    logLine("the server went away: waiting for /healthz");
  }
  const status = $("#status");
  status.dataset.state = name;
  $("#status-text").textContent = { connected: "connected", reconnecting: "reconnecting…", connecting: "connecting…",
    error: "error" }[name] || name;
  status.title = detail || "";
  if (detail && name === "error") toast(detail, "error");
}

function toast(message, kind) {
  const box = h("div", { class: `toast ${kind || ""}` }, message);
  document.body.append(box);
  setTimeout(() => box.remove(), 4000);
}

// --- protocol panel --------------------------------------------------------------------------

function logMessage(direction, message, answered) {
  state.logCount++;
  $("#protocol-count").textContent = String(state.logCount);
  const log = $("#protocol-log");
  const method = message.method || (answered ? answered.method : "");
  const outcome = "error" in message ? `error ${message.error.code}` : "result" in message ? "result" : "";
  const kind = "error" in message ? "is-error" : "id" in message ? "" : "notification";
  const entry = h("li", { class: `msg ${direction} ${kind}`, dataset: { method } });
  const time = new Date().toLocaleTimeString([], { hour12: false });
  const summary = h("summary", {},
    h("span", { class: "arrow" }, direction === "out" ? "→" : "←"), h("span", { class: "time" }, time),
    h("span", { class: "method" }, method), "id" in message ? h("span", { class: "id" }, `#${message.id}`) : null,
    outcome ? h("span", { class: "outcome" }, outcome) : null,
    answered ? h("span", { class: "ms" }, `${Math.round(answered.ms)} ms`) : null,
    h("span", { class: "preview" }, preview(message)));
  const details = h("details", {}, summary);
  details.addEventListener("toggle", () => {
    if (details.open && details.childNodes.length === 1) details.append(h("pre", { class: "raw" }, JSON.stringify(message, null, 2)));
  }, { once: false });
  entry.append(details);
  applyLogFilter(entry);
  const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  log.append(entry);
  while (log.childElementCount > MAX_LOG) log.firstElementChild.remove();
  if (atBottom) log.scrollTop = log.scrollHeight;
}

function preview(message) {
  const text = JSON.stringify(message.params || message.result || message.error || {});
  return text.length > 160 ? text.slice(0, 160) + "…" : text;
}

function applyLogFilter(entry) {
  const filter = $("#protocol-filter").value.trim().toLowerCase();
  entry.hidden = Boolean(filter) && !entry.dataset.method.toLowerCase().includes(filter);
}

// --- notifications -------------------------------------------------------------------------------

const refreshList = debounce(() => reloadResources(), 150);

function onNotification(message) {
  const params = message.params || {};
  if (message.method === "notifications/resources/updated") {
    const uri = params.uri;
    markUpdated(uri);
    if (state.selected && state.selected.kind === "resource" && state.selected.key === uri) readSelected(true);
  } else if (message.method === "notifications/resources/list_changed") {
    refreshList();
  }
}

function markUpdated(uri) {
  for (const el of document.querySelectorAll(".item")) {
    if (el.dataset.uri === uri) {
      el.classList.remove("flash");
      void el.offsetWidth;
      el.classList.add("flash");
    }
  }
}

// --- loading lists ---------------------------------------------------------------------------------

async function loadNextPage(draw = true) {
  if (state.cursor === null) return;
  if (state.loading) return state.loading;
  state.loading = (async () => {
    try {
      const params = state.cursor ? { cursor: state.cursor } : {};
      const result = await client.request("resources/list", params);
      for (const resource of result.resources || []) {
        if (!state.byUri.has(resource.uri)) state.resources.push(resource);
        state.byUri.set(resource.uri, resource);
      }
      state.cursor = result.nextCursor || null;
      if (!state.pageSize && result.nextCursor) state.pageSize = (result.resources || []).length;
    } catch (error) {
      toast(`resources/list: ${error.message}`, "error");
      throw error;
    } finally {
      state.loading = null;
    }
    if (draw) renderList();
  })();
  return state.loading;
}

// every remaining page; the list is drawn now and then (drawing is what costs, not reading)
async function loadAllPages() {
  let drawnAt = performance.now();
  while (state.cursor !== null) {
    try { await loadNextPage(false); } catch (_) { break; }
    if (performance.now() - drawnAt > 1000) {
      $("#list-footer").firstChild.textContent = `${state.resources.length} loaded · loading…`;
      drawnAt = performance.now();
    }
  }
  renderList();
}

async function reloadResources() {
  // as many pages as were loaded before (a list_changed or a reconnect must not hide any)
  const pages = Math.max(1, Math.ceil(state.resources.length / Math.max(1, state.pageSize || state.resources.length || 1)));
  state.resources = [];
  state.byUri = new Map();
  state.cursor = undefined;
  state.loading = null;
  for (let page = 0; page < pages && state.cursor !== null; page++) {
    try { await loadNextPage(false); } catch (_) { break; }
  }
  await loadTemplates();
  renderList();
}

async function loadTemplates() {
  const templates = [];
  let cursor;
  try {
    do {
      const result = await client.request("resources/templates/list", cursor ? { cursor } : {});
      templates.push(...(result.resourceTemplates || []));
      cursor = result.nextCursor;
    } while (cursor);
  } catch (error) {
    toast(`resources/templates/list: ${error.message}`, "error");
  }
  state.templates = templates.map((t) => ({ ...t, matcher: templateMatcher(t.uriTemplate) }));
  $("#template-count").textContent = String(templates.length);
}

async function loadSkills() {
  const caps = (client.server && client.server.capabilities) || {};
  const extensions = caps.extensions || {};
  const has = Boolean(extensions["io.modelcontextprotocol/skills"]);
  $("#skills-tab").hidden = !has;
  state.skills = [];
  if (!has) return;
  let cursor;
  try {
    do {
      const result = await client.request("skills/list", cursor ? { cursor } : {});
      state.skills.push(...(result.skills || []));
      cursor = result.nextCursor;
    } while (cursor);
  } catch (error) {
    toast(`skills/list: ${error.message}`, "error");
  }
  $("#skill-count").textContent = String(state.skills.length);
}

async function refreshAll() {
  renderServerInfo();
  await reloadResources();
  await loadSkills();
  renderList();
  if (state.selected) reopenSelected();
}

function renderServerInfo() {
  const server = client.server || {};
  // the handshake's serverInfo, or in 2026-07-28 the one every result carries in _meta
  const info = server.serverInfo || (server._meta || {})["io.modelcontextprotocol/serverInfo"];
  const box = $("#server-info");
  box.replaceChildren(...[
    h("strong", {}, info ? info.title || info.name : "stateless server"),
    info && info.version ? h("span", { class: "muted" }, ` v${info.version}`) : null,
    !info && server.supportedVersions ? h("span", { class: "muted" }, ` · ${server.supportedVersions.join(", ")}`) : null,
  ].filter(Boolean));
  box.title = server.instructions || "";
}

// --- the sidebar -----------------------------------------------------------------------------------

function matchesFilter(entry) {
  const filter = state.filter;
  if (!filter) return true;
  return [entry.uri, entry.uriTemplate, entry.name, entry.title].some((v) => v && v.toLowerCase().includes(filter));
}

function itemRow(resource, label) {
  if (label !== undefined) return leafRow(resource, label);
  const selected = state.selected && state.selected.kind === "resource" && state.selected.key === resource.uri;
  const live = client.subscribed.has(resource.uri);
  return h("div", { class: `item ${selected ? "selected" : ""}`, role: "button", tabindex: "0", title: resource.uri,
    dataset: { uri: resource.uri }, onclick: () => openResource(resource.uri),
    onkeydown: (e) => { if (e.key === "Enter") openResource(resource.uri); } },
  h("span", { class: "item-name" }, label || resource.title || resource.name || resource.uri),
  live ? h("span", { class: "live-dot", title: "subscribed" }) : null,
  h("span", { class: "item-uri" }, resource.uri));
}

// a tree leaf: its last segment, and its title if it has one
function leafRow(resource, label) {
  const selected = state.selected && state.selected.kind === "resource" && state.selected.key === resource.uri;
  const live = client.subscribed.has(resource.uri);
  const title = resource.title || (resource.name !== label ? resource.name : "");
  return h("div", { class: `item leaf ${selected ? "selected" : ""}`, role: "button", tabindex: "0", title: resource.uri,
    dataset: { uri: resource.uri }, onclick: () => openResource(resource.uri),
    onkeydown: (e) => { if (e.key === "Enter") openResource(resource.uri); } },
  h("span", { class: "leaf-name" }, label || resource.uri), live ? h("span", { class: "live-dot", title: "subscribed" }) : null,
  title ? h("span", { class: "leaf-title" }, title) : null);
}

function splitUri(uri) {
  const match = uri.match(/^([a-zA-Z][\w+.-]*):(\/\/)?(.*)$/);
  if (!match) return [uri];
  const rest = match[3];
  const segments = rest.split("/");
  const scheme = `${match[1]}:${match[2] || ""}`;
  return [scheme, ...segments.filter((s, i) => s !== "" || i === segments.length - 1)];
}

function buildTree(resources) {
  const root = { children: new Map(), leaves: [] };
  for (const resource of resources) {
    const parts = splitUri(resource.uri);
    let node = root;
    for (const part of parts.slice(0, -1)) {
      if (!node.children.has(part)) node.children.set(part, { children: new Map(), leaves: [] });
      node = node.children.get(part);
    }
    node.leaves.push([parts[parts.length - 1] || parts[0], resource]);
  }
  return root;
}

function countLeaves(node) {
  let n = node.leaves.length;
  for (const child of node.children.values()) n += countLeaves(child);
  return n;
}

function renderTree(node, depth, path) {
  const fragment = document.createDocumentFragment();
  for (const [name, child] of node.children) {
    const key = path + "\u0000" + name;
    const open = state.filter ? true : (state.openNodes.has(key) ? state.openNodes.get(key) : depth < 2);
    const details = h("details", { class: "tree-node", open, dataset: { path: name } },
      h("summary", {}, h("span", { class: "folder" }, depth === 0 ? name : `${name}/`),
        h("span", { class: "count" }, String(countLeaves(child)))));
    details.addEventListener("toggle", () => {
      state.openNodes.set(key, details.open);
      if (details.open && details.childElementCount === 1) details.append(renderTree(child, depth + 1, key));
    });
    if (open) details.append(renderTree(child, depth + 1, key));
    fragment.append(details);
  }
  const wrap = h("div", { class: "tree-children" });
  wrap.append(fragment);
  appendLeaves(wrap, node.leaves, 0);
  return wrap;
}

// a folder's resources, a chunk at a time: a folder of 100,000 stays responsive
function appendLeaves(wrap, leaves, from) {
  const to = Math.min(leaves.length, from + CHUNK);
  const fragment = document.createDocumentFragment();
  for (let i = from; i < to; i++) fragment.append(itemRow(leaves[i][1], leaves[i][0]));
  wrap.append(fragment);
  if (to < leaves.length) {
    const more = h("button", { class: "btn small show-more", type: "button" }, `Show ${Math.min(CHUNK, leaves.length - to)} more of ${leaves.length - to}`);
    more.addEventListener("click", () => { more.remove(); appendLeaves(wrap, leaves, to); });
    wrap.append(more);
  }
}

function renderList() {
  const list = $("#list");
  const scroll = list.scrollTop;
  const footer = $("#list-footer");
  footer.replaceChildren();
  const loaded = count(state.resources.length);
  $("#resource-count").textContent = state.cursor === null ? loaded : `${loaded}+`;
  $("#view-mode").hidden = state.tab !== "resources";
  if (state.tab === "resources") {
    const shown = state.resources.filter(matchesFilter);
    // flat: rows are drawn a chunk at a time, then pages are loaded, both as the end comes into view
    const drawn = state.mode === "tree" ? shown.length : Math.min(shown.length, Math.max(state.drawn, CHUNK));
    if (state.mode === "tree") list.replaceChildren(renderTree(buildTree(shown), 0, ""));
    else list.replaceChildren(...shown.slice(0, drawn).map((r) => itemRow(r)));
    state.drawn = drawn;
    if (!shown.length && state.cursor === null) list.append(h("p", { class: "muted pad" }, state.filter ? "Nothing matches." : "No resources."));
    if (drawn < shown.length || (state.cursor !== null && state.cursor !== undefined)) {
      const label = drawn < shown.length ? `Show more (${shown.length - drawn} loaded)` : "Load next page";
      const more = h("button", { class: "btn load-more", type: "button", id: "load-more", onclick: () => advance() }, label);
      list.append(h("div", { class: "sentinel" }, more));
      observeSentinel(more);
    }
    if (state.cursor !== null && state.cursor !== undefined) {
      footer.append(h("span", {}, `${loaded} loaded · more pages`),
        h("button", { class: "btn small", type: "button", id: "load-all", onclick: () => loadAllPages() }, "Load all"));
    } else {
      footer.append(h("span", {}, `${loaded} resources · all pages loaded`));
    }
    if (state.filter) {
      footer.prepend(h("span", { class: "muted" }, `${count(shown.length)} match · `));
      if (state.cursor !== null) {
        list.prepend(h("div", { class: "hint" }, "Only loaded pages are searched. ",
          h("button", { class: "btn small", type: "button", onclick: () => loadAllPages() }, "Search all pages")));
      }
    }
  } else if (state.tab === "templates") {
    list.replaceChildren(...renderTemplates());
    footer.append(h("span", {}, `${state.templates.length} templates`));
    if (state.cursor !== null) {
      footer.append(h("button", { class: "btn small", type: "button", onclick: () => loadAllPages() }, "Load all instances"));
    }
  } else {
    list.replaceChildren(...renderSkills());
    footer.append(h("span", {}, `${state.skills.length} skills`));
  }
  list.scrollTop = scroll;
}

let observer = null;
function observeSentinel(button) {
  if (observer) observer.disconnect();
  observer = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) advance();
  }, { root: $("#list"), rootMargin: "200px" });
  observer.observe(button);
}

// the end of the list came into view: draw more of what is loaded, else load the next page
function advance() {
  const matched = state.resources.filter(matchesFilter).length;
  if (state.mode === "flat" && state.drawn < matched) {
    state.drawn += CHUNK;
    renderList();
  } else {
    loadNextPage().catch(() => {});
  }
}

function instancesOf(template) {
  if (!template.matcher) return [];
  return state.resources.filter((r) => matchesTemplate(template, r.uri));
}

function renderTemplates() {
  const rows = [];
  for (const template of state.templates) {
    const instances = instancesOf(template);
    if (!matchesFilter(template) && !instances.some(matchesFilter)) continue;
    const selected = state.selected && state.selected.kind === "template" && state.selected.key === template.uriTemplate;
    const row = h("div", { class: "template-group" },
      h("div", { class: `item template ${selected ? "selected" : ""}`, role: "button", tabindex: "0",
        dataset: { template: template.uriTemplate }, onclick: () => openTemplate(template.uriTemplate) },
      h("span", { class: "item-name" }, template.title || template.name),
      h("span", { class: "item-uri" }, template.uriTemplate),
      instances.length ? h("span", { class: "count" }, `${instances.length} listed`) : null));
    const shown = instances.filter(matchesFilter).slice(0, 200);
    if (shown.length) {
      const children = h("div", { class: "instances" }, ...shown.map((r) => itemRow(r)));
      if (instances.length > shown.length) children.append(h("p", { class: "muted pad" }, `${instances.length - shown.length} more`));
      row.append(children);
    }
    rows.push(row);
  }
  if (!rows.length) rows.push(h("p", { class: "muted pad" }, "No templates."));
  return rows;
}

function renderSkills() {
  return state.skills.filter((s) => matchesFilter({ uri: s.uri, name: (s.frontmatter || {}).name })).map((skill) => {
    const fm = skill.frontmatter || {};
    const dir = skill.uri.replace(/\/SKILL\.md$/, "");
    return h("div", { class: "item", role: "button", tabindex: "0", dataset: { skill: skill.uri },
      onclick: () => openDirectory(dir) },
    h("span", { class: "item-name" }, fm.name || skill.uri), h("span", { class: "item-uri" }, fm.description || skill.uri));
  });
}

// --- the detail pane ---------------------------------------------------------------------------------

function reopenSelected() {
  const { kind, key } = state.selected;
  if (kind === "resource") readSelected(true);
  else if (kind === "template") openTemplate(key);
  else if (kind === "directory") openDirectory(key);
}

function highlightSelection() {
  for (const el of document.querySelectorAll(".item.selected")) el.classList.remove("selected");
  if (!state.selected) return;
  const attr = state.selected.kind === "template" ? "template" : "uri";
  for (const el of document.querySelectorAll(".item")) {
    if (el.dataset[attr] === state.selected.key) el.classList.add("selected");
  }
}

async function openResource(uri) {
  state.selected = { kind: "resource", key: uri };
  highlightSelection();
  const listed = state.byUri.get(uri) || { uri };
  const detail = $("#detail");
  const live = client.subscribed.has(uri);
  const subscribe = h("button", { class: `btn ${live ? "active" : ""}`, type: "button", id: "subscribe",
    "aria-pressed": live ? "true" : "false", onclick: () => toggleSubscription(uri) }, live ? "● Subscribed" : "Subscribe");
  detail.replaceChildren(
    h("div", { class: "detail-head" },
      h("div", { class: "titles" },
        h("h2", {}, listed.title || listed.name || uri),
        h("code", { class: "uri", id: "current-uri" }, uri),
        listed.description ? h("p", { class: "description" }, listed.description) : null),
      h("div", { class: "actions" }, subscribe,
        h("button", { class: "btn", type: "button", onclick: () => readSelected(false) }, "Reload"),
        listed.streamable ? h("button", { class: "btn", type: "button", id: "stream-download",
          title: "resources/stream (SEP-2532, experimental): the bytes as they are, no base64",
          onclick: () => streamDownload(uri, listed) }, "Download") : null,
        h("button", { class: "btn", type: "button", onclick: () => navigator.clipboard && navigator.clipboard.writeText(uri) }, "Copy URI"))),
    h("div", { id: "directory" }),
    h("div", { id: "contents", class: "contents" }, h("p", { class: "muted" }, "Reading…")));
  await readSelected(false);
  const caps = listed.capabilities || {};
  if (caps.list) showDirectory(uri, $("#directory"));
}

async function toggleSubscription(uri) {
  try {
    if (client.subscribed.has(uri)) await client.unsubscribe(uri);
    else await client.subscribe(uri);
  } catch (error) {
    client.subscribed.delete(uri);
    toast(`subscribe: ${error.message}`, "error");
  }
  const live = client.subscribed.has(uri);
  const button = $("#subscribe");
  if (button && state.selected && state.selected.key === uri) {
    button.textContent = live ? "● Subscribed" : "Subscribe";
    button.classList.toggle("active", live);
    button.setAttribute("aria-pressed", live ? "true" : "false");
  }
  renderList();
}

let readGeneration = 0;
async function readSelected(quiet) {
  if (!state.selected || state.selected.kind !== "resource") return;
  const uri = state.selected.key;
  const generation = ++readGeneration;
  const started = performance.now();
  let result;
  try {
    result = await client.request("resources/read", { uri });
  } catch (error) {
    if (generation !== readGeneration) return;
    const box = $("#contents");
    if (box) box.replaceChildren(h("div", { class: "error-box" }, h("strong", {}, `Error ${error.code ?? ""}`), " ", error.message));
    renderMeta(state.byUri.get(uri) || { uri }, null);
    return;
  }
  if (generation !== readGeneration || !state.selected || state.selected.key !== uri) return;
  const box = $("#contents");
  if (!box) return;
  const scroll = $("#detail").scrollTop;
  releaseBlobs();
  box.replaceChildren(...(result.contents || []).map((c) => renderContent(c, (state.byUri.get(uri) || {}).mimeType)));
  box.dataset.readAt = String(Date.now());
  if (!(result.contents || []).length) box.append(h("p", { class: "muted" }, "No contents."));
  box.append(h("p", { class: "muted small", id: "read-time" }, `read in ${Math.round(performance.now() - started)} ms`));
  $("#detail").scrollTop = scroll;
  if (quiet) { box.classList.remove("flash"); void box.offsetWidth; box.classList.add("flash"); }
  renderMeta(state.byUri.get(uri) || { uri }, result);
}

// a streamable resource's bytes through resources/stream (SEP-2532 draft, HTTP): the response body
// is the content itself, so a file too large for resources/read downloads all the same
async function streamDownload(uri, listed) {
  const message = { jsonrpc: "2.0", id: ++client.nextId, method: "resources/stream", params: { uri,
    _meta: { [META_PROTOCOL]: MODERN, [META_CAPS]: { ...CLIENT_CAPS, resourceStreaming: {} } } } };
  client.hooks.log("out", message);
  const started = performance.now();
  let response;
  try {
    response = await fetch(ENDPOINT, { method: "POST", body: JSON.stringify(message), headers: {
      "content-type": "application/json", accept: "application/json, */*",
      "mcp-protocol-version": MODERN, "mcp-method": "resources/stream" } });
  } catch (error) {
    toast(`download: ${error}`, "error");
    return;
  }
  if (!response.headers.get("mcp-resource-uri")) { // no bytes: a JSON-RPC error (or an HTTP refusal)
    let body = null;
    try { body = await response.json(); } catch (_) { /* not JSON */ }
    if (body) client.received(body);
    toast(`download: ${body && body.error ? body.error.message : `HTTP ${response.status}`}`, "error");
    return;
  }
  const blob = await response.blob();
  const url = URL.createObjectURL(blob);
  blobUrls.push(url);
  const name = uri.split(/[/:]/).filter(Boolean).pop() || listed.name || "resource";
  const link = h("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  toast(`${name}: ${formatBytes(blob.size)} streamed in ${Math.round(performance.now() - started)} ms`);
}

function metaRow(label, value) {
  if (value === undefined || value === null || value === "") return null;
  const shown = typeof value === "object" ? h("div", { class: "json small" }, renderJson(value)) : h("span", {}, String(value));
  return h("div", { class: "meta-row" }, h("dt", {}, label), h("dd", {}, shown));
}

function renderMeta(listed, result) {
  const meta = $("#meta");
  const rows = [h("h3", {}, "Metadata")];
  const contents = (result && result.contents) || [];
  const first = contents[0] || {};
  const version = (first._meta || {})[META_VERSION] || (listed._meta || {})[META_VERSION];
  rows.push(h("dl", {},
    metaRow("URI", listed.uri || listed.uriTemplate),
    metaRow("name", listed.name), metaRow("title", listed.title),
    metaRow("mimeType", first.mimeType || listed.mimeType),
    metaRow("size", contents.length ? formatBytes(contents.reduce((n, c) => n + (c.text !== undefined ? utf8Length(c.text) : base64Bytes(c.blob || "").length), 0))
      : listed.size !== undefined ? formatBytes(listed.size) : undefined),
    metaRow("declared size", contents.length && listed.size !== undefined ? formatBytes(listed.size) : undefined),
    metaRow("version", version),
    metaRow("annotations", listed.annotations),
    metaRow("capabilities", listed.capabilities),
    metaRow("icons", listed.icons),
    metaRow("_meta", listed._meta),
    contents.length > 1 ? metaRow("contents", contents.length) : null,
    metaRow("content _meta", first._meta),
    result ? metaRow("ttlMs", result.ttlMs) : null,
    result ? metaRow("cacheScope", result.cacheScope) : null,
    client.subscribed.has(listed.uri) ? metaRow("live", "subscribed: refreshes on notifications/resources/updated") : null));
  meta.replaceChildren(...rows);
}

// --- directories: resources/directory/read (skills), SEP-2093 children (other listable resources) -----

function directoryMethod(uri) {
  // the skills extension declares directoryRead only when the app serves skills; any other
  // listable resource is listed through SEP-2093, which this page opts into (CLIENT_CAPS)
  const caps = (client.server && client.server.capabilities) || {};
  const skills = (caps.extensions || {})["io.modelcontextprotocol/skills"];
  return skills && skills.directoryRead && uri.startsWith("skill://") ? "resources/directory/read" : "resources/list";
}

async function showDirectory(uri, box, cursor) {
  if (!box) return;
  const params = cursor ? { uri, cursor } : { uri };
  const method = directoryMethod(uri);
  let result;
  try {
    result = await client.request(method, params);
  } catch (error) {
    box.replaceChildren(h("div", { class: "error-box" }, `${method}: ${error.message}`));
    return;
  }
  if (!cursor) box.replaceChildren(h("h3", {}, "Entries"));
  const list = h("div", { class: "dir-list" });
  for (const entry of result.resources || []) {
    const isDir = entry.mimeType === "inode/directory" || (entry.capabilities || {}).list;
    list.append(h("div", { class: `item ${isDir ? "dir" : ""}`, role: "button", tabindex: "0", dataset: { uri: entry.uri },
      onclick: () => (entry.mimeType === "inode/directory" ? openDirectory(entry.uri) : openResource(entry.uri)) },
    h("span", { class: "item-name" }, isDir ? h("span", { class: "dir-icon", "aria-hidden": "true" }) : null, entry.name || entry.uri),
    h("span", { class: "item-uri" }, entry.uri)));
  }
  box.append(list);
  if (result.nextCursor) {
    const more = h("button", { class: "btn small", type: "button", onclick: () => { more.remove(); showDirectory(uri, box, result.nextCursor); } }, "More");
    box.append(more);
  }
}

function openDirectory(uri) {
  state.selected = { kind: "directory", key: uri };
  highlightSelection();
  const crumbs = h("nav", { class: "crumbs" });
  const match = uri.match(/^([a-zA-Z][\w+.-]*:\/\/)(.*)$/);
  if (match) {
    const parts = match[2].split("/").filter(Boolean);
    parts.forEach((part, i) => {
      const target = match[1] + parts.slice(0, i + 1).join("/");
      if (i) crumbs.append(" / ");
      crumbs.append(h("a", { href: "#", onclick: (e) => { e.preventDefault(); openDirectory(target); } }, part));
    });
  }
  const box = h("div", { id: "directory" });
  const name = uri.replace(/\/+$/, "").split("/").pop() || uri;
  $("#detail").replaceChildren(h("div", { class: "detail-head" }, h("div", { class: "titles" }, h("h2", {}, name),
    h("code", { class: "uri" }, uri), crumbs)), box);
  $("#meta").replaceChildren(h("h3", {}, "Metadata"), h("dl", {}, metaRow("URI", uri), metaRow("method", directoryMethod(uri))));
  showDirectory(uri, box);
}

// --- templates: a typed form with completion -----------------------------------------------------------

function openTemplate(uriTemplate) {
  const template = state.templates.find((t) => t.uriTemplate === uriTemplate);
  if (!template) return;
  state.selected = { kind: "template", key: uriTemplate };
  highlightSelection();
  const schemas = ((template._meta || {})[META_VARIABLES]) || {};
  const variables = templateVariables(uriTemplate);
  const completions = Boolean(client.server && client.server.capabilities && client.server.capabilities.completions);
  const form = h("form", { class: "template-form", id: "template-form", autocomplete: "off" });
  const inputs = {};
  const preview = h("code", { class: "uri", id: "template-preview" });
  const values = () => {
    const out = {};
    for (const v of variables) {
      const input = inputs[v.name];
      let value = input.type === "checkbox" ? (input.checked ? "true" : "") : input.value.trim();
      if (value === "") continue;
      if ((schemas[v.name] || {}).type === "array" || v.explode) value = value.split(",").map((s) => s.trim()).filter(Boolean);
      out[v.name] = value;
    }
    return out;
  };
  const update = () => { preview.textContent = expandTemplate(uriTemplate, values()); };
  for (const variable of variables) {
    if (inputs[variable.name]) continue;
    const schema = schemas[variable.name] || {};
    const id = `var-${variable.name}`;
    let input;
    if (schema.enum || schema.type === "boolean") {
      const options = schema.enum || ["true", "false"];
      input = h("select", { id, name: variable.name },
        h("option", { value: "" }, schema.required ? "choose…" : `default${schema.default !== undefined ? ` (${schema.default})` : ""}`),
        ...options.map((o) => h("option", { value: String(o) }, String(o))));
    } else if (schema.type === "integer" || schema.type === "number") {
      input = h("input", { id, name: variable.name, type: "number", step: schema.type === "integer" ? "1" : "any",
        placeholder: schema.default !== undefined ? String(schema.default) : "" });
    } else if (schema.format === "date") {
      input = h("input", { id, name: variable.name, type: "date" });
    } else if (schema.format === "date-time") {
      input = h("input", { id, name: variable.name, type: "datetime-local", step: "1" });
    } else {
      input = h("input", { id, name: variable.name, type: "text", spellcheck: "false",
        placeholder: schema.default !== undefined ? String(schema.default) : schema.type === "array" ? "a,b,c" : schema.format || "" });
    }
    if (schema.required) input.required = true;
    inputs[variable.name] = input;
    input.addEventListener("input", update);
    input.addEventListener("change", update);
    const field = h("div", { class: "field" },
      h("label", { for: id }, variable.name, schema.required ? h("span", { class: "req" }, " *") : null,
        h("span", { class: "type" }, describeType(schema, variable))),
      input, schema.description ? h("small", { class: "muted" }, schema.description) : null);
    // any typed box a completer serves (an int with complete= too), not only text
    if (input.tagName === "INPUT" && ["text", "number"].includes(input.type) && completions
        && (schema.completion || !Object.keys(schemas).length)) {
      attachCompletion(field, input, template, variable.name, () => values());
    }
    form.append(field);
  }
  const result = h("div", { id: "contents", class: "contents" });
  form.append(h("div", { class: "form-foot" }, h("span", { class: "muted" }, "URI "), preview,
    h("button", { class: "btn primary", type: "submit", id: "template-read" }, "Read")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const uri = expandTemplate(uriTemplate, values());
    result.replaceChildren(h("p", { class: "muted" }, "Reading…"));
    try {
      const read = await client.request("resources/read", { uri });
      releaseBlobs();
      result.replaceChildren(h("div", { class: "instance-head" }, h("span", { class: "muted" }, "Instance "),
        h("a", { href: "#", class: "uri", onclick: (e) => { e.preventDefault(); openResource(uri); } }, uri)),
      ...(read.contents || []).map((c) => renderContent(c, template.mimeType)));
      renderMeta({ uri, mimeType: template.mimeType, _meta: template._meta }, read);
    } catch (error) {
      result.replaceChildren(h("div", { class: "error-box" }, h("strong", {}, `Error ${error.code ?? ""}`), " ", error.message));
    }
  });
  const instances = instancesOf(template);
  $("#detail").replaceChildren(
    h("div", { class: "detail-head" }, h("div", { class: "titles" },
      h("h2", {}, template.title || template.name), h("code", { class: "uri" }, uriTemplate),
      template.description ? h("p", { class: "description" }, template.description) : null)),
    ...[form, result,
    state.cursor !== null && template.lister !== false ? h("div", { class: "hint" },
      "Listed instances come after every resource: load all pages to see them here.",
      h("button", { class: "btn small", type: "button", onclick: () => loadAllPages().then(() => openTemplate(uriTemplate)) },
        "Load all pages")) : null,
    instances.length ? h("section", { class: "instances-box" }, h("h3", {}, `Listed instances (${instances.length})`),
      ...instances.slice(0, 100).map((r) => itemRow(r))) : null].filter(Boolean));
  renderMeta(template, null);
  update();
}

function describeType(schema, variable) {
  if (schema.enum) return "one of";
  if (schema.type === "array") return `list of ${(schema.items || {}).type || "string"}`;
  if (schema.format) return schema.format;
  return schema.type || (variable.explode ? "list" : "text");
}

function attachCompletion(field, input, template, name, values) {
  const box = h("ul", { class: "suggestions", role: "listbox", hidden: true });
  field.classList.add("has-suggestions");
  field.append(box);
  let active = -1;
  let asked = 0;
  const choose = (value) => {
    input.value = value;
    box.hidden = true;
    input.dispatchEvent(new Event("input"));
  };
  const ask = debounce(async () => {
    const ticket = ++asked;
    const others = values();
    delete others[name];
    for (const key of Object.keys(others)) if (Array.isArray(others[key])) others[key] = others[key].join(",");
    let result;
    try {
      result = await client.request("completion/complete", { ref: { type: "ref/resource", uri: template.uriTemplate },
        argument: { name, value: input.value }, context: { arguments: others } });
    } catch (_) { return; }
    if (ticket !== asked || document.activeElement !== input) return;
    const suggestions = (result.completion && result.completion.values) || [];
    active = -1;
    box.replaceChildren(...suggestions.map((value) => h("li", { role: "option", class: "suggestion",
      onmousedown: (e) => { e.preventDefault(); choose(value); } }, value)));
    if (result.completion && result.completion.hasMore) box.append(h("li", { class: "muted more" }, `${result.completion.total} in all`));
    box.hidden = !suggestions.length;
  }, 120);
  input.addEventListener("input", (e) => { if (e.isTrusted) ask(); });
  input.addEventListener("focus", ask);
  input.addEventListener("blur", () => setTimeout(() => { box.hidden = true; }, 100));
  input.addEventListener("keydown", (event) => {
    const items = [...box.querySelectorAll(".suggestion")];
    if (box.hidden || !items.length) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      active = (active + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
      items.forEach((el, i) => el.classList.toggle("active", i === active));
    } else if (event.key === "Enter" && active >= 0) {
      event.preventDefault();
      choose(items[active].textContent);
    } else if (event.key === "Escape") {
      box.hidden = true;
    }
  });
}

// --- wiring -------------------------------------------------------------------------------------

async function start(era) {
  state.era = era;
  localStorage.setItem("rk-era", era);
  $("#era").value = era;
  setStatus("connecting");
  for (let delay = 300; ; delay = Math.min(delay * 1.5, 3000)) {
    try {
      await client.connect(era);
      break;
    } catch (error) {
      setStatus("reconnecting", String(error.message || error));
      await sleep(delay);
    }
  }
  renderServerInfo();
  state.resources = [];
  state.byUri = new Map();
  state.cursor = undefined;
  await loadNextPage().catch(() => {});
  await loadTemplates();
  await loadSkills();
  renderList();
  if (state.selected) reopenSelected();
}

function init() {
  state.openNodes = new Map();
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => {
      state.tab = tab.dataset.tab;
      document.querySelectorAll(".tab").forEach((t) => t.classList.toggle("active", t === tab));
      renderList();
    });
  }
  for (const button of document.querySelectorAll("#view-mode button")) {
    button.classList.toggle("active", button.dataset.mode === state.mode);
    button.addEventListener("click", () => {
      state.mode = button.dataset.mode;
      localStorage.setItem("rk-mode", state.mode);
      document.querySelectorAll("#view-mode button").forEach((b) => b.classList.toggle("active", b === button));
      renderList();
    });
  }
  $("#search").addEventListener("input", debounce((e) => {
    state.filter = e.target.value.trim().toLowerCase();
    state.drawn = 0;
    renderList();
  }, 120));
  $("#era").addEventListener("change", (e) => start(e.target.value));
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && !/^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName)) {
      e.preventDefault();
      $("#search").focus();
    }
  });
  $("#toggle-protocol").addEventListener("click", () => {
    const panel = $("#protocol");
    panel.hidden = !panel.hidden;
    $("#toggle-protocol").setAttribute("aria-pressed", panel.hidden ? "false" : "true");
    document.body.classList.toggle("with-protocol", !panel.hidden);
    if (!panel.hidden) $("#protocol-log").scrollTop = $("#protocol-log").scrollHeight;
  });
  $("#protocol-resize").addEventListener("pointerdown", (down) => {
    const panel = $("#protocol");
    const start = panel.getBoundingClientRect().height;
    const move = (e) => {
      const height = Math.min(window.innerHeight - 160, Math.max(120, start + down.clientY - e.clientY));
      panel.style.height = `${height}px`;
    };
    const up = () => { window.removeEventListener("pointermove", move); window.removeEventListener("pointerup", up); };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
    down.preventDefault();
  });
  $("#protocol-clear").addEventListener("click", () => { $("#protocol-log").replaceChildren(); });
  $("#protocol-filter").addEventListener("input", () => document.querySelectorAll("#protocol-log .msg").forEach(applyLogFilter));
  window.addEventListener("pagehide", () => client.endSession());
  start(state.era);
}

document.addEventListener("DOMContentLoaded", init);
