// xmlpipe dashboard: logs in with POST /auth/login, then reads the REST API
// (agents, gateways, threads, messages, calls, organism, pending approvals)
// once a second, sends through the /ws JSON protocol (continuing the
// selected conversation), shows agents' text as it streams (delta events of
// the /api/v1/ws event stream), lets operators decide approvals and cancel
// or kill the conversations they began, admins any and halt and resume the
// agents; Log out revokes the session. Both sockets are opened again whenever they
// close (the organism restarted, the network dropped); a session that ended
// returns to the login form. Everything from the server is shown as text,
// never as markup.
"use strict";

// openSeq is the journal seq of the last envelope of the open conversation
// the dashboard has drawn, openThreads its threads, openGen counts the
// conversations opened (a read for one opened before is dropped) and
// following is the read of its new envelopes under way (see followOpen).
const state = { token: null, role: null, who: "", ticker: null, ws: null, stream: null, selected: null, openSeq: 0,
  openThreads: new Set(), openGen: 0, following: null, followAgain: false, callsDue: false, callsCheck: 0,
  last: null, rates: [], lats: [], lastLat: null, drawn: {}, live: new Map(), feedBefore: null, feedNewer: [],
  feedNext: null, failedOnly: false };

// feedSize is how many threads one page of the conversation list asks for.
const feedSize = 30;

// feedPath is the thread list's read: the newest page, or (failed only,
// or stepped to older ones) a page of the cursor walk — from the newest
// ("end") or from where the page before it stopped (feedBefore, the
// "next" the server gave). A filtered page walks a bounded part of the
// journal, so it may come back short, with the cursor to go on from.
function feedPath() {
  let p = "/api/v1/threads?limit=" + feedSize;
  if (state.failedOnly) p += "&status=error";
  if (state.failedOnly || state.feedBefore) p += "&before=" + encodeURIComponent(state.feedBefore || "end");
  return p;
}

// pageSize is how many envelopes one read of the open conversation asks
// for: a long conversation is read a page at a time until all of it is
// drawn, and then only what is journaled after it.
const pageSize = 500;

// A closed socket is opened again after reconnectFirst ms, the wait
// doubling with each failed attempt up to reconnectMax.
const reconnectFirst = 500, reconnectMax = 10000;

// sessionWarning is how long before its session ends the dashboard says
// so (at most half the session's lifetime).
const sessionWarning = 5 * 60 * 1000;

// maxLiveConversations and maxLiveText bound the streamed text kept.
const maxLiveConversations = 32, maxLiveText = 65536;

// changed reports whether what a view shows differs from its last drawing
// (views are redrawn only then, so a node a user is clicking stays put).
function changed(view, data) {
  const key = JSON.stringify(data);
  if (state.drawn[view] === key) return false;
  state.drawn[view] = key;
  return true;
}
const $ = (sel) => document.querySelector(sel);
const el = (tag, props = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
};
const svg = (tag, attrs = {}) => {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
};

async function api(method, path, body) {
  const r = await fetch(path, {
    method,
    headers: { "Authorization": "Bearer " + state.token, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const j = await r.json().catch(() => ({}));
  if (!r.ok) {
    const e = new Error(j.error || String(r.status));
    e.status = r.status;
    throw e;
  }
  return j;
}

$("#login").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("#login-error").textContent = "";
  const r = await fetch("/auth/login", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ username: $("#username").value, password: $("#password").value, totp: $("#totp").value }),
  });
  const j = await r.json().catch(() => ({}));
  if (!r.ok) { $("#login-error").textContent = loginRefusal(r, j); return; }
  // The form stays in the page, hidden: it keeps no credential.
  $("#password").value = ""; $("#totp").value = "";
  start(j);
});

// loginRefusal says why a login was refused; a lockout (429) also says
// how long it lasts (its Retry-After, in seconds).
function loginRefusal(r, j) {
  const why = j.error || "Login failed";
  const wait = Number(r.headers.get("Retry-After"));
  if (r.status !== 429 || !(wait > 0)) return why;
  return why + ": try again in " + (wait < 120 ? wait + " s" : Math.ceil(wait / 60) + " min");
}

// start opens the dashboard for the session j (a login's answer, or
// /auth/me's under --insecure-dev, where no login is asked).
function start(j) {
  state.token = j.token; state.role = j.role; state.user = j.username; state.who = j.username + " (" + j.role + ")"; state.drawn = {};
  // The session's end by the page's clock: the server says how long it
  // has left (its clock may differ from this one). None under --insecure-dev.
  const left = Number(j.expires_in) * 1000;
  state.expiresAt = j.insecure_dev || !(left > 0) ? null : Date.now() + left;
  state.warnBefore = Math.min(sessionWarning, left / 2);
  // What the same user typed before their session ended is theirs again.
  if (state.draft && state.draft.user === j.username) $("#send-input").value = state.draft.text;
  state.draft = null;
  state.feedBefore = null; state.feedNewer = []; state.feedNext = null; state.lastRead = null;
  if (j.insecure_dev) state.who += " — insecure dev mode: no login, everyone is admin";
  $("#who").textContent = state.who;
  document.body.classList.toggle("admin", j.role === "admin");
  const canSend = j.role === "operator" || j.role === "admin";
  $("#send-form").hidden = !canSend;
  $("#send-refused").hidden = canSend;
  $("#logout-button").hidden = !!j.insecure_dev; // nothing to log out of without a login
  $("#login").hidden = true;
  $("#main").hidden = false;
  connect();
  listen();
  tick();
  state.ticker = setInterval(poll, 1000);
}

// checkSession says, from sessionWarning before the session ends, when it
// will, and once it has ends the dashboard's side of it (signOut) instead
// of letting the next click fail; false then.
function checkSession() {
  if (!state.token || !state.expiresAt) return true;
  const left = state.expiresAt - Date.now();
  if (left <= 0) {
    signOut("Your session expired: log in again.", true);
    return false;
  }
  const n = $("#session-notice");
  n.hidden = left > state.warnBefore;
  if (!n.hidden) {
    const s = Math.ceil(left / 1000);
    n.textContent = "Your session expires in " + (s < 120 ? s + " s" : Math.ceil(s / 60) + " min") +
      ": log out and in again to go on without losing your place.";
  }
  return true;
}

// The login form shows unless the server needs none: under --insecure-dev
// /auth/me answers without a token (insecure_dev), and the dashboard opens.
fetch("/auth/me").then((r) => r.ok ? r.json() : {}).catch(() => ({})).then((j) => {
  if (j.insecure_dev && !state.token) start(j); else if (!state.token) $("#login").hidden = false;
});

// signOut ends the dashboard's session (the server no longer knows the
// token: it expired, was logged out or its user removed): the sockets
// close for good and the login form returns with why. keepDraft keeps
// what was typed in the send box, out of sight, for the same user's next
// login (a session that ended under them, not a Log out).
function signOut(why, keepDraft) {
  clearInterval(state.ticker);
  state.draft = keepDraft && $("#send-input").value ? { user: state.user, text: $("#send-input").value } : null;
  state.expiresAt = null;
  $("#session-notice").hidden = true;
  const sockets = [state.ws, state.stream];
  state.token = null; state.ws = null; state.stream = null;
  for (const ws of sockets) if (ws) ws.close();
  $("#who").textContent = ""; delete $("#who").dataset.outage;
  $("#connection").textContent = "";
  $("#logout-button").hidden = true;
  forgetSession();
  $("#main").hidden = true;
  $("#login").hidden = false;
  $("#totp").value = "";
  $("#login-error").textContent = why;
}

// The Log out button revokes the session's token on the server (POST
// /auth/logout), then closes the dashboard: on a shared machine nothing
// is left that still works.
$("#logout-button").addEventListener("click", async () => {
  const token = state.token;
  if (!token) return;
  try {
    const r = await fetch("/auth/logout", { method: "POST", headers: { "Authorization": "Bearer " + token } });
    // 401: the session had ended already, which is as good.
    if (!r.ok && r.status !== 401) throw new Error((await r.json().catch(() => ({}))).error || String(r.status));
  } catch (e) {
    refused("log out", e);
    return;
  }
  signOut("Logged out.");
});

// keepOpen opens the WebSocket at path as state[key] (the token as the
// "bearer" subprotocol) and opens it again whenever it closes while the
// session lasts, waiting longer after each failed attempt; wire sets up
// each new socket. #connection shows whether both sockets are open.
function keepOpen(key, path, wire) {
  const token = state.token;
  let wait = reconnectFirst;
  const open = () => {
    if (state.token !== token) return; // the session ended (a new login keeps its own sockets)
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
    const ws = new WebSocket(url, ["bearer", token]);
    state[key] = ws;
    ws.addEventListener("open", () => { wait = reconnectFirst; drawConnection(); });
    ws.addEventListener("close", () => {
      if (state[key] !== ws) return; // replaced, or the session ended
      drawConnection();
      setTimeout(open, wait);
      wait = Math.min(2 * wait, reconnectMax);
    });
    wire(ws);
    drawConnection();
  };
  open();
}

// drawConnection shows whether the dashboard hears the organism live.
function drawConnection() {
  const up = [state.ws, state.stream].every((ws) => ws && ws.readyState === WebSocket.OPEN);
  const c = $("#connection");
  c.dataset.state = up ? "connected" : "reconnecting";
  c.textContent = up ? "live" : "reconnecting…";
}

// connect keeps the /ws socket open (sending, approvals, halts).
function connect() {
  keepOpen("ws", "/ws", wireSend);
}

// wireSend handles the frames of a /ws socket.
function wireSend(ws) {
  ws.onmessage = (m) => {
    let f; try { f = JSON.parse(m.data); } catch { return; }
    if (f.type === "sent") {
      const s = $("#send-status");
      s.textContent = "sent to " + f.target; s.dataset.thread = f.thread_id; s.className = "";
      $("#send-input").value = "";
      if (state.selected !== f.thread_id) openConversation(f.thread_id, state.user); // the next message continues it
    } else if (f.type === "error") {
      // Too busy: what was typed stays in the box; say when to send it again.
      const s = $("#send-status"); s.className = "error";
      s.textContent = f.error + (f.code === "busy" && f.retry_after > 0 ? " — try again in " + f.retry_after + " s" : "");
    } else if (f.type === "approval" || f.type === "approval_decided" || f.type === "halted" || f.type === "resumed") {
      tick();
    }
  };
}

// listen keeps the event stream open for agents' streamed text and the
// conversations' completions. A stream opened again reloads the open
// conversation: what happened while it was closed is in the journal.
function listen() {
  keepOpen("stream", "/api/v1/ws", (ws) => {
    ws.onopen = () => {
      ws.send(JSON.stringify({ cmd: "subscribe", events: ["delta", "thread_updated"] }));
      followOpen(true).catch(() => {});
    };
    ws.onmessage = streamFrame;
  });
}

// streamFrame handles a frame of the event stream.
function streamFrame(m) {
  let f; try { f = JSON.parse(m.data); } catch { return; }
  if (f.event === "delta") streamed(f);
  else if (f.event === "thread_updated") {
    state.live.delete(f.thread_id); // the answers are journaled now: the envelopes show them
    if (f.thread_id === state.selected) { drawLive(); followOpen(true).catch(() => {}); }
  }
}

// streamed keeps a piece of an agent's text in its conversation and shows
// it when that conversation is open. An end mark without text (every model
// call sends one as it ends, whether it streamed text or not — an aborted
// call too) ends the agent's stream and draws nothing of its own: an
// ended block — the note a halt added to a cut-off reply — stays as it
// was; and the open conversation's model calls are read again, so the
// call that just ended is listed with its outcome even when nothing is
// journaled after it (a halt holds the turn). The organism records a call
// before its end mark goes out.
function streamed(d) {
  const open = d.thread_id === state.selected;
  if (!d.text) {
    if (!d.end) return;
    const s = state.live.get(d.thread_id)?.get(d.agent);
    if (s) s.ended = true;
    // The call is recorded before its end mark goes out but committed a
    // moment later (a halt then holds the turn: nothing journaled after it
    // would prompt a read): the calls are read again at the next ticks.
    if (open) { state.callsCheck = callsChecks; drawLive(); followOpen(true).catch(() => {}); }
    return;
  }
  let conv = state.live.get(d.thread_id);
  if (!conv) {
    conv = new Map();
    state.live.set(d.thread_id, conv);
    if (state.live.size > maxLiveConversations) state.live.delete(state.live.keys().next().value);
  }
  let s = conv.get(d.agent);
  if (!s || s.ended) { s = { text: "", ended: false }; conv.set(d.agent, s); }
  s.text = (s.text + d.text).slice(-maxLiveText);
  s.ended = !!d.end;
  if (open) drawLive();
}

// drawLive shows the streamed text of the open conversation, one block per
// agent that has streamed text (never an empty block).
function drawLive() {
  const box = $("#live");
  box.replaceChildren();
  const conv = state.live.get(state.selected);
  if (!conv) return;
  for (const [agent, s] of conv) {
    if (!s.text) continue;
    box.append(el("pre", { "data-agent": agent, class: s.ended ? "ended" : "streaming", text: "[" + agent + "] " + s.text }));
  }
}

$("#send-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const raw = $("#send-input").value.trim();
  if (!raw) return;
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) {
    const s = $("#send-status"); s.textContent = "not sent: not connected to the organism (reconnecting)"; s.className = "error";
    return;
  }
  $("#send-status").textContent = "sending…";
  const req = { type: "send", raw };
  if (state.selected && ownsOpen()) req.thread_id = state.selected;
  state.ws.send(JSON.stringify(req));
});

// The New button: the next message begins a new conversation.
$("#new-button").addEventListener("click", closeConversation);

// closeConversation closes the open conversation: nothing is selected and
// the next message begins a new one.
function closeConversation() {
  state.selected = null; state.openOwner = ""; state.openSeq = 0; state.openThreads = new Set(); state.openGen++; state.callsCheck = 0;
  for (const li of document.querySelectorAll("#feed li")) li.classList.remove("selected");
  $("#thread-id").textContent = "";
  $("#envelopes").replaceChildren();
  $("#live").replaceChildren();
  $("#calls tbody").replaceChildren();
  $("#context tbody").replaceChildren();
  $("#context-box").hidden = true;
  $("#send-target").textContent = "new conversation";
  delete $("#send-status").dataset.thread;
}

// forgetSession empties every view of what the session that ended saw:
// the next user at the machine starts from a blank page.
function forgetSession() {
  closeConversation();
  for (const sel of ["#feed", "#approvals", "#agents tbody", "#graph"]) $(sel).replaceChildren();
  $("#approvals-box").hidden = true;
  $("#send-status").textContent = ""; $("#send-input").value = "";
  $("#action-error").textContent = ""; $("#action-error").hidden = true;
  state.live.clear(); state.drawn = {}; state.rates = []; state.lats = []; state.last = null; state.lastLat = null;
  $("#spark polyline").setAttribute("points", ""); $("#latency polyline").setAttribute("points", "");
  $("#rate").textContent = ""; $("#latency-ms").textContent = "";
}

// poll is the once-a-second read of the organism's state: none is begun
// while one is under way (an API slower than a second — a large journal —
// would otherwise have reads pile up, each slowing the others).
function poll() {
  if (checkSession() && !state.ticking) tick();
}

// tick reads the organism's state and draws it, one read at a time: a
// call while one runs (an action done, an approval pushed) reads again
// once it is done, so what is drawn is newer than the call.
function tick() {
  if (state.ticking) { state.tickAgain = true; return state.ticking; }
  state.ticking = (async () => {
    try {
      do { state.tickAgain = false; await readState(); } while (state.tickAgain && state.token);
    } finally { state.ticking = null; }
  })();
  return state.ticking;
}

// readState is one read of tick.
async function readState() {
  if (!checkSession()) return;
  const token = state.token;
  try {
    const feed = feedPath();
    const [agents, threads, org, gws, pending] = await Promise.all([
      api("GET", "/api/v1/agents"), api("GET", feed), api("GET", "/api/v1/organism"),
      api("GET", "/api/v1/gateways"), api("GET", "/api/v1/approvals?status=pending&limit=50")]);
    if (state.token !== token) return; // the session ended meanwhile: draw nothing of it
    drawStatus(org.status);
    drawStore(org.store);
    drawApprovals(pending.approvals);
    drawGraph(agents.agents.filter((a) => !a.name.startsWith("system.")), gws.gateways);
    drawAgents(agents.agents, org.halted_listeners || []);
    // A page asked for before the list was stepped or filtered is not drawn.
    if (feed === feedPath()) { state.feedNext = threads.next || null; drawFeed(threads.threads); drawFeedNav(threads.threads); }
    followOpen().catch(() => {});
    drawRate(org.total_messages);
    drawLatency(org.handler_seconds_sum, org.handler_count);
    state.lastRead = new Date();
    drawOutage(null);
  } catch (e) {
    if (e.status === 401 && state.token) { signOut("Your session has ended: log in again.", true); return; }
    if (state.token) drawOutage(e);
  }
}

// drawOutage says in the header why the last read failed, keeping what
// was drawn before on screen: a read that never got an answer (the
// browser's "Failed to fetch": the organism stopped, restarts, or the
// network is down) says the organism is unreachable and that the
// dashboard retries, and since when its data is; an answer refusing the
// read says the server's reason. null clears it.
function drawOutage(e) {
  const who = $("#who");
  if (!e) { who.textContent = state.who; delete who.dataset.outage; return; }
  const since = state.lastRead ? " (showing what it said at " + state.lastRead.toTimeString().slice(0, 8) + ")" : "";
  const why = e.status === undefined
    ? "organism unreachable — retrying every second" + since
    : "the organism refused a read (" + e.status + ": " + e.message + ") — retrying" + since;
  who.textContent = state.who + " — " + why;
  who.dataset.outage = e.status === undefined ? "unreachable" : "refused";
}

// drawFeedNav offers the step to older threads when the page says the
// list goes on (its "next"), and back to newer ones after a step; and says
// so when a page came back short because it walked the part of the
// journal one read may (the older ones go on from there).
function drawFeedNav(threads) {
  $("#older-button").hidden = !state.feedNext;
  $("#newer-button").hidden = !state.feedBefore;
  let note = "";
  if (threads.length < feedSize && state.feedNext) {
    note = threads.length === 0 ? "none in this part of the journal: Older searches on" : "Older searches further back";
  } else if (!state.feedNext && state.feedBefore) {
    note = "the journal's oldest";
  }
  $("#feed-note").textContent = note;
}

// The steps of the conversation list: to the page after the one shown,
// back to the one before it, and the failed-only filter (from the newest).
$("#older-button").addEventListener("click", () => {
  if (!state.feedNext) return;
  state.feedNewer.push(state.feedBefore);
  state.feedBefore = state.feedNext;
  tick();
});
$("#newer-button").addEventListener("click", () => {
  state.feedBefore = state.feedNewer.length ? state.feedNewer.pop() : null;
  tick();
});
$("#failed-only").addEventListener("change", (ev) => {
  state.failedOnly = ev.target.checked;
  state.feedBefore = null; state.feedNewer = [];
  tick();
});

// drawStatus shows whether the organism runs or is halted, and turns the
// admin's button into halt or resume.
function drawStatus(status) {
  const s = $("#org-status");
  s.textContent = status; s.dataset.status = status;
  const b = $("#halt-button");
  const halted = status === "halted";
  b.textContent = halted ? "Resume" : "Halt agents";
  b.dataset.action = halted ? "resume" : "halt";
}

// drawStore says, while the store's commits fail (a full disk), since
// when and why, and that messages are refused until it recovers; nothing
// while it is ok (or absent: no store, or a user with a profile).
function drawStore(store) {
  const p = $("#store-alert");
  if (!store || store.state === "ok") { p.hidden = true; p.textContent = ""; return; }
  p.textContent = "The store cannot write since " + store.since + " (" + store.error + "): messages are refused " +
    "until the disk takes writes again" + (store.held_writes ? " — " + store.held_writes + " writes wait for it." : ".");
  p.hidden = false;
}

$("#halt-button").addEventListener("click", () => {
  const action = $("#halt-button").dataset.action;
  api("POST", "/api/v1/organism/" + (action === "resume" ? "resume" : "halt")).then(done, (e) => refused(action, e));
});

// drawApprovals lists the calls waiting for a human: who asks for what,
// the held envelope, when it times out, and (operators, admins) approve
// and deny buttons — deny with the reason typed beside it. An approval
// listed already keeps its item, so a reason being typed, and the focus,
// stay as they are when another call begins waiting or one is decided.
function drawApprovals(approvals) {
  if (!changed("approvals", approvals.map((a) => a.id))) return;
  $("#approvals-box").hidden = approvals.length === 0;
  const list = $("#approvals");
  const had = new Map([...list.children].map((li) => [li.dataset.approval, li]));
  const items = approvals.map((a) => had.get(a.id) || approvalItem(a));
  for (const [id, li] of had) if (!approvals.some((a) => a.id === id)) li.remove();
  // Put each in its place without taking out the ones already there (an
  // element taken out of the page loses the focus).
  items.forEach((li, i) => { if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null); });
}

// approvalItem is the list item of the waiting call a.
function approvalItem(a) {
  const canDecide = state.role === "operator" || state.role === "admin";
  const li = el("li", { "data-approval": a.id },
    el("div", { text: a.agent + " → " + a.target + " (" + a.kind + ", " + a.id + ")" }),
    el("div", { text: "in " + (a.user ? a.user + "'s" : "the organism's own") + " conversation " + (a.thread_id || "").slice(0, 8) }),
    el("div", { text: a.request_reason || "" }),
    el("pre", { text: prettyXML(a.payload || "") }));
  // When it stops waiting: then the call is refused, "approval timed out".
  const expires = new Date(a.expires_at);
  if (!isNaN(expires)) li.append(el("div", { class: "expires", title: a.expires_at,
    text: "times out at " + expires.toTimeString().slice(0, 8) + " unless decided" }));
  if (canDecide) {
    const reason = el("input", { class: "deny-reason", placeholder: "reason (for a denial)" });
    const decide = (decision) => api("POST", "/api/v1/approvals/" + encodeURIComponent(a.id),
      { decision, reason: reason.value }).then(tick).catch((e) => { li.append(el("span", { class: "error", text: " " + e.message })); });
    const ok = el("button", { text: "approve", "data-decision": "approve" });
    ok.addEventListener("click", () => decide("approve"));
    const no = el("button", { text: "deny", "data-decision": "deny" });
    no.addEventListener("click", () => decide("deny"));
    li.append(ok, " ", no, " ", reason);
  }
  return li;
}

// drawGraph draws the listeners on a circle, an edge to each peer, each
// node coloured by its state; and the federation gateways as diamonds in a
// column on the right (filled when the link is up, dashed when down),
// labelled with the root tags they export, a dashed edge to each listener
// that stands for one of the peer's capabilities (an import).
function drawGraph(agents, gateways) {
  if (!changed("graph", [agents.map((a) => [a.name, a.state, a.peers]),
    gateways.map((w) => [w.name, w.connected, w.peer, w.imports, w.exports])])) return;
  const g = $("#graph");
  g.replaceChildren();
  const pos = new Map();
  const cx = gateways.length ? 200 : 240, cy = 180, r = Math.min(140, 40 + agents.length * 20);
  agents.forEach((a, i) => {
    const t = (2 * Math.PI * i) / Math.max(1, agents.length) - Math.PI / 2;
    pos.set(a.name, [cx + r * Math.cos(t), cy + r * Math.sin(t)]);
  });
  for (const a of agents) {
    for (const p of a.peers || []) {
      if (!pos.has(p)) continue;
      const [x1, y1] = pos.get(a.name), [x2, y2] = pos.get(p);
      g.append(svg("line", { x1, y1, x2, y2 }));
    }
  }
  gateways.forEach((w, i) => {
    const x = 420, y = (360 * (i + 1)) / (gateways.length + 1);
    for (const name of w.imports) {
      if (!pos.has(name)) continue;
      const [x2, y2] = pos.get(name);
      g.append(svg("line", { x1: x, y1: y, x2, y2, class: "import" }));
    }
    const node = svg("g", { "data-name": w.name, "data-connected": String(w.connected), class: "gateway" });
    node.append(svg("polygon", { points: [[x, y - 20], [x + 20, y], [x, y + 20], [x - 20, y]].join(" "),
      class: w.connected ? "gw-up" : "gw-down" }));
    const title = svg("title");
    title.textContent = "gateway " + w.name + (w.connected ? " — linked to " + w.peer : " — disconnected") +
      "; queued " + w.queued + ", open calls " + w.open_calls;
    node.append(title);
    const label = svg("text", { x, y: y + 34 });
    label.textContent = w.name + (w.connected && w.peer ? " ⇄ " + w.peer : "");
    node.append(label);
    const exports = svg("text", { x, y: y + 48, class: "exports" });
    exports.textContent = w.exports.length ? "exports " + w.exports.join(", ") : "exports nothing";
    node.append(exports);
    g.append(node);
  });
  for (const a of agents) {
    const [x, y] = pos.get(a.name);
    const node = svg("g", { "data-name": a.name, "data-state": a.state, class: "node" });
    node.append(svg("circle", { cx: x, cy: y, r: 18, class: "state-" + a.state }));
    const label = svg("text", { x, y: y + 32 });
    label.textContent = a.name;
    node.append(label);
    g.append(node);
  }
}

// count renders a listener's count, or a dash when it is not shown (the
// API leaves the organism-wide counts out for a user with a profile).
function count(n) {
  return n === undefined || n === null ? "—" : String(n);
}

function drawAgents(agents, haltedAlone) {
  const alone = new Set(haltedAlone.map((n) => n.toLowerCase()));
  if (!changed("agents", [agents.map((a) => [a.name, a.state, a.queue_depth, a.handled]), [...alone]])) return;
  const body = $("#agents tbody");
  body.replaceChildren();
  for (const a of agents) {
    const act = el("td", { class: "admin-only" });
    if (state.role === "admin" && !a.name.startsWith("system.")) {
      const paused = a.state === "paused";
      const b = el("button", { text: paused ? "resume" : "pause", "data-agent": a.name });
      b.addEventListener("click", () => api("POST", "/api/v1/agents/" + encodeURIComponent(a.name) + (paused ? "/resume" : "/pause"))
        .then(done, (e) => refused((paused ? "resume " : "pause ") + a.name, e)));
      act.append(b);
      // The emergency stop of this listener alone (its running calls
      // aborted), or the lifting of it.
      const halted = alone.has(a.name.toLowerCase());
      const h = el("button", { text: halted ? "unhalt" : "halt", "data-halt": a.name });
      h.addEventListener("click", () => api("POST", "/api/v1/organism/" + (halted ? "resume" : "halt"), { listener: a.name })
        .then(done, (e) => refused((halted ? "unhalt " : "halt ") + a.name, e)));
      act.append(h);
    }
    body.append(el("tr", {}, el("td", { text: a.name }), el("td", { text: a.state, class: "status-" + a.state }),
      el("td", { text: count(a.queue_depth) }), el("td", { text: count(a.handled) }), act));
  }
}

// refused shows why the server refused an admin's action (the conversation
// ended meanwhile, the listener is gone, the organism is stopping) until
// the next action succeeds, and redraws so the views show the state as it
// is now; done clears it after an action that succeeded.
function refused(what, e) {
  const p = $("#action-error");
  p.textContent = what + ": " + e.message; p.hidden = false;
  tick();
}
function done() {
  const p = $("#action-error");
  p.textContent = ""; p.hidden = true;
  tick();
}

// drawFeed lists the conversations (their first thread), newest first.
// Each is opened with a click, or from the keyboard (Tab to it, Enter);
// the item or button that had the focus has it again once the list is
// drawn anew.
function drawFeed(threads) {
  if (!changed("feed", [state.selected, threads.map((t) => [t.id, t.conversation, t.status, t.participants, t.owner])])) return;
  const feed = $("#feed");
  const had = feed.contains(document.activeElement) ? document.activeElement : null;
  const focus = had && { conv: had.closest("li").dataset.conversation, stop: had.dataset.stop };
  feed.replaceChildren();
  // One row per conversation, newest first, shown by its root thread when
  // that is listed.
  const rows = new Map();
  for (const t of threads) {
    const conv = t.conversation || t.id;
    if (!rows.has(conv) || t.id === conv) rows.set(conv, t);
  }
  for (const [conv, t] of rows) {
    // When it began and its id's first characters tell apart the
    // conversations between the same participants.
    const began = new Date(t.created_at);
    const when = (isNaN(began) ? "" : began.toTimeString().slice(0, 8) + " ") + conv.slice(0, 8);
    const li = el("li", { "data-conversation": conv, class: conv === state.selected ? "selected" : "", tabindex: "0" },
      el("span", { class: "when", title: conv, text: when + " " }),
      el("span", { text: (t.participants || []).join(" → ") + " " }),
      el("span", { class: "owner", text: t.owner ? "by " + t.owner : "" }), t.owner ? " " : "",
      el("span", { class: "status-" + t.status, text: t.status }));
    if (t.status === "active" && canStop(t)) {
      for (const [stop, title] of [["cancel", "stop the answer being made; the conversation may be continued"],
        ["kill", "stop the conversation for good"]]) {
        const b = el("button", { text: stop, "data-stop": stop, title });
        b.addEventListener("click", (ev) => {
          ev.stopPropagation();
          api("POST", "/api/v1/threads/" + encodeURIComponent(t.id) + "/" + stop)
            .then(done, (e) => refused(stop + " " + t.id.slice(0, 8), e));
        });
        li.append(" ", b);
      }
    }
    li.addEventListener("click", () => openConversation(conv, t.owner));
    li.addEventListener("keydown", (ev) => {
      if (ev.target !== li || (ev.key !== "Enter" && ev.key !== " ")) return;
      ev.preventDefault();
      openConversation(conv, t.owner);
    });
    feed.append(li);
    if (focus && focus.conv === conv) (li.querySelector(`button[data-stop="${focus.stop}"]`) || li).focus({ preventScroll: true });
  }
}

// callsChecks is at how many ticks after a model call's end mark the open
// conversation's calls are read again.
const callsChecks = 5;

// followOpen draws the envelopes of the open conversation journaled after
// those drawn (a message, a call held or decided, a cancel's or a kill's
// dead letters) — when it was just opened, all of it, a page at a time —
// and then reloads its model calls and context when there was something
// new or withCalls. It asks the API for the conversation's entries after
// the last seq drawn, so a poll costs what is new, not the whole
// conversation. One read runs at a time: a call while one runs makes it
// read again once done.
function followOpen(withCalls) {
  if (withCalls) state.callsDue = true;
  if (state.following) { state.followAgain = true; return state.following; }
  state.following = (async () => {
    try {
      do { state.followAgain = false; await readNew(); } while (state.followAgain);
    } finally { state.following = null; }
  })();
  return state.following;
}

// readNew is one read of followOpen.
async function readNew() {
  const conv = state.selected, gen = state.openGen;
  if (!conv) return;
  const base = "/api/v1/threads/" + encodeURIComponent(conv) + "/messages?scope=conversation&limit=" + pageSize + "&after=";
  for (;;) {
    const j = await api("GET", base + state.openSeq);
    if (gen !== state.openGen) return; // another conversation was opened meanwhile
    drawEnvelopes(j.messages);
    if (j.messages.length > 0) state.callsDue = true;
    if (j.messages.length < pageSize) break;
  }
  if (state.callsCheck > 0) { state.callsCheck--; state.callsDue = true; }
  if (!state.callsDue) return;
  state.callsDue = false;
  const calls = await api("GET", "/api/v1/usage/calls?limit=100&thread=" + encodeURIComponent(conv));
  if (gen !== state.openGen) return;
  drawCalls(calls.calls);
  drawContext(conv, gen);
}

// canStop reports whether the user may cancel or kill the conversation of
// thread t: an admin any, an operator those it began (the API's owner, as
// the server's ownership check knows it); the server checks again.
function canStop(t) {
  if (state.role === "admin") return true;
  return state.role === "operator" && !!t.owner && t.owner === state.user;
}

// openConversation shows every envelope of the conversation in journal
// order, failures highlighted, the text its agents are streaming and its
// model calls; the send box continues it from now on when owner (who
// began it, as the API says) is the user — the server lets no one else
// continue it — and otherwise begins a new conversation, saying so.
async function openConversation(conv, owner) {
  state.selected = conv; state.openSeq = 0; state.openThreads = new Set(); state.openGen++; state.callsCheck = 0;
  state.openOwner = owner || "";
  for (const li of document.querySelectorAll("#feed li")) li.classList.toggle("selected", li.dataset.conversation === conv);
  $("#thread-id").textContent = conv;
  drawSendTarget();
  $("#envelopes").replaceChildren();
  $("#calls tbody").replaceChildren();
  $("#context tbody").replaceChildren();
  drawLive();
  await followOpen(true);
}

// ownsOpen reports whether the open conversation is the user's own: only
// its owner may continue it.
function ownsOpen() {
  return !!state.selected && !!state.user && state.openOwner === state.user;
}

// drawSendTarget says what the send box's next message does: continue the
// open conversation, or begin a new one — also when the open conversation
// is someone else's, whose it is.
function drawSendTarget() {
  const t = $("#send-target");
  if (!state.selected) t.textContent = "new conversation";
  else if (ownsOpen()) t.textContent = "continues " + state.selected.slice(0, 8);
  else t.textContent = "new conversation (" + state.selected.slice(0, 8) + " is " +
    (state.openOwner ? state.openOwner + "'s" : "the organism's") + ": only who began it continues it)";
}

// drawEnvelopes adds envelopes of the open conversation, journaled after
// those drawn, to its list.
function drawEnvelopes(messages) {
  const list = $("#envelopes");
  for (const m of messages) {
    if (!(m.seq > state.openSeq)) continue; // drawn already
    state.openSeq = m.seq;
    if (m.thread_id) state.openThreads.add(m.thread_id);
    // A decision (a call held for approval, approved, denied) is the
    // governance at work, not a failure; so are the refusal a denial
    // answered with and the messages a cancel dropped (the API's outcome).
    // A refusal retention pruned keeps no payload, and so no outcome: what
    // the journal kept of it (its kind, its root) says it was a refusal,
    // which the governance decides — a decision too.
    const prunedRefusal = !!m.pruned && (m.kind === "refusal" || m.payload_type === "refusal");
    const decision = m.kind === "decision" || !!m.outcome || prunedRefusal;
    const failure = !decision && m.kind !== "message" && m.kind !== "reply";
    // A message refused before its payload was known has no payload type.
    const tag = m.payload_type ? "  <" + m.payload_type + ">" : "";
    const li = el("li", { class: "envelope" + (failure ? " failure" : "") + (decision ? " decision" : "") + (m.repaired ? " repaired" : ""),
      "data-kind": m.kind, "data-seq": String(m.seq) },
      el("div", { text: m.from + " → " + (m.listener || m.to || "–") + tag + "  " + m.kind +
        (m.outcome ? "  (" + m.outcome + ")" : "") + (m.repaired ? "  (repaired)" : "") +
        (m.pruned ? "  (pruned: " + m.pruned.reason + ")" : "") }));
    if (m.diagnostics && m.diagnostics.length) {
      // Why it was refused (or failed), as the journal recorded it.
      li.append(el("div", { class: "diagnostics" }, ...m.diagnostics.map((d) => el("div", { text: d }))));
    }
    // What an agent asked to remember is its conversation's owner's: to
    // anyone else the API withholds it, and the request shows without it.
    li.append(m.withheld ? el("div", { class: "withheld", text: "(withheld: " + m.withheld +
      " — shown to the conversation's owner and admins only)" }) : el("pre", { text: prettyXML(m.payload || "") }));
    list.append(li);
    if (m.direction === "outbound") dropLive(state.selected, m.from);
  }
}

// dropLive removes agent's ended stream from conv's live text once the
// envelope of its answer is drawn: the answer shows once, as the envelope.
function dropLive(conv, agent) {
  const c = state.live.get(conv);
  const s = c && c.get(agent);
  if (!s || !s.ended) return;
  c.delete(agent);
  drawLive();
}

// drawCalls lists the open conversation's model calls: tokens, time to the
// first token, total time, outcome and the journal seq of the envelope each
// produced. A call its caller stopped (a halt, cancel, kill, reload) reads
// "aborted", how in its tooltip; one the backend failed "failed: " and why;
// the tokens of either are what it spent (estimated when the model had
// begun to stream, else 0). Estimated tokens read "≈" (tokensCell).
function drawCalls(calls) {
  const body = $("#calls tbody");
  body.replaceChildren();
  const msec = (v) => v ? (v < 10000 ? Math.round(v) + " ms" : (v / 1000).toFixed(1) + " s") : "–";
  for (const c of calls) {
    const kind = c.outcome || (c.error ? "failed" : "completed");
    const outcome = kind === "aborted" ? "aborted" : kind === "failed" ? "failed: " + c.error :
      (c.finish_reason || "") + (c.tool_calls ? ", " + c.tool_calls + " tool calls" : "");
    const cell = { text: outcome, class: kind === "completed" ? "" : kind, "data-outcome": kind };
    if (kind === "aborted" && c.error) cell.title = c.error;
    body.append(el("tr", { "data-call": String(c.id) },
      el("td", { text: c.agent }), el("td", { text: c.backend + "/" + c.model }),
      el("td", tokensCell(c)),
      el("td", { text: msec(c.first_token_ms) }), el("td", { text: msec(c.duration_ms) }),
      el("td", cell),
      el("td", { text: c.envelope_seq ? "#" + c.envelope_seq : "" })));
  }
}

// tokensCell is a call's tokens cell: "prompt + completion", marked "≈"
// (and saying so in its tooltip) when they are an estimate — a call stopped
// mid-stream, a backend that reports no usage.
function tokensCell(c) {
  const text = c.prompt_tokens + " + " + c.completion_tokens;
  if (!c.usage_estimated) return { text };
  return { text: "≈" + text, title: "an estimate, 4 bytes a token: the backend gave no count",
    "data-estimated": "" };
}

// drawContext lists the context segments of the open conversation's
// threads (opened as the gen-th) that have a context history (an agent's
// conversation): each segment's tier (expanded, folded, evicted),
// relevance, size and fold summary.
async function drawContext(conv, gen) {
  const threads = [...state.openThreads];
  const got = await Promise.all(threads.map((t) =>
    api("GET", "/api/v1/threads/" + encodeURIComponent(t) + "/context").catch(() => null)));
  if (gen !== state.openGen) return;
  const body = $("#context tbody");
  body.replaceChildren();
  let n = 0;
  for (const c of got) {
    if (!c) continue;
    for (const sg of c.segments) {
      n++;
      body.append(el("tr", { "data-thread": c.thread_id, "data-segment": sg.id, "data-tier": sg.tier },
        el("td", { text: c.thread_id.slice(0, 8) }), el("td", { text: sg.id }),
        el("td", { text: sg.content_type + (sg.from ? " from " + sg.from : "") }),
        el("td", { text: sg.tier, class: "tier-" + sg.tier }),
        el("td", { text: sg.scored ? sg.relevance.toFixed(2) : "–" }),
        el("td", { text: sg.byte_size + " B" }),
        el("td", { text: sg.withheld ? "(withheld: " + sg.withheld + ")" : sg.summary || "", class: "summary",
          title: sg.summary || "" })));
    }
  }
  $("#context-box").hidden = n === 0;
}

// escapeText and escapeAttr write character data and an attribute value
// back as XML (as exclusive C14N does), so text that looks like markup
// shows as the text it is.
const escapeText = (t) => t.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const escapeAttr = (t) => t.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;")
  .replace(/\t/g, "&#x9;").replace(/\n/g, "&#xA;").replace(/\r/g, "&#xD;");

// prettyXML indents well-formed XML two spaces a level, text and attribute
// values escaped; anything else is returned as it is.
function prettyXML(src) {
  const doc = new DOMParser().parseFromString(src, "application/xml");
  if (doc.getElementsByTagName("parsererror").length > 0) return src;
  const out = [];
  const walk = (n, depth) => {
    const pad = "  ".repeat(depth);
    if (n.nodeType === Node.TEXT_NODE) { const t = n.nodeValue.trim(); if (t) out.push(pad + escapeText(t)); return; }
    if (n.nodeType !== Node.ELEMENT_NODE) return;
    const attrs = Array.from(n.attributes).map((a) => " " + a.name + '="' + escapeAttr(a.value) + '"').join("");
    const kids = Array.from(n.childNodes);
    if (kids.length === 1 && kids[0].nodeType === Node.TEXT_NODE) {
      out.push(pad + "<" + n.nodeName + attrs + ">" + escapeText(kids[0].nodeValue) + "</" + n.nodeName + ">");
      return;
    }
    if (kids.length === 0) { out.push(pad + "<" + n.nodeName + attrs + "/>"); return; }
    out.push(pad + "<" + n.nodeName + attrs + ">");
    for (const k of kids) walk(k, depth + 1);
    out.push(pad + "</" + n.nodeName + ">");
  };
  walk(doc.documentElement, 0);
  return out.join("\n");
}

// drawRate keeps the handled-message counter's rate (messages_processed_total
// in /metrics) over the last 60 polls, read at the page's time at (ms), as a
// sparkline: messages per second, however long a poll took.
function drawRate(total, at = Date.now()) {
  if (state.last !== null) {
    const secs = Math.max(1, at - state.lastAt) / 1000;
    state.rates.push(Math.round(Math.max(0, total - state.last) / secs));
  }
  state.last = total; state.lastAt = at;
  if (state.rates.length > 60) state.rates.shift();
  const max = Math.max(1, ...state.rates);
  const pts = state.rates.map((v, i) => (i * 4) + "," + (38 - (v / max) * 36)).join(" ");
  $("#spark polyline").setAttribute("points", pts);
  $("#rate").textContent = (state.rates.at(-1) || 0) + " /s";
}

// drawLatency keeps the mean handler latency of each poll interval (the
// differences of stage_duration_seconds{stage="handler"}'s sum and count,
// which /api/v1/organism reports when metrics are on) as a sparkline.
function drawLatency(sum, count) {
  if (sum === undefined || count === undefined) { $("#latency-box").hidden = true; return; }
  $("#latency-box").hidden = false;
  if (state.lastLat) {
    const dn = count - state.lastLat.count;
    // A second in which no handler ran has no mean (null): drawn on the
    // baseline, read "—".
    state.lats.push(dn > 0 ? (sum - state.lastLat.sum) / dn * 1000 : null);
  }
  state.lastLat = { sum, count };
  if (state.lats.length > 60) state.lats.shift();
  const max = Math.max(0.001, ...state.lats);
  const pts = state.lats.map((v, i) => (i * 4) + "," + (38 - ((v || 0) / max) * 36)).join(" ");
  $("#latency polyline").setAttribute("points", pts);
  const last = state.lats.at(-1);
  $("#latency-ms").textContent = typeof last !== "number" ? "—" : (last < 1 ? last.toFixed(3) : last.toFixed(1)) + " ms";
}
