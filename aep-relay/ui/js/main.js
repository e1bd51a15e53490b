// The page: reads the relay's events over /stream into the fleet
// projection, shows the fleet, the inbox and each session, and sends
// answers over /socket. Only the relay's public surfaces are used.

import { h, replace } from './dom.js';
import { loadToken, saveToken } from './token.js';
import { EventStream } from './stream.js';
import { ControlSocket } from './socket.js';
import { Fleet } from './projection.js';
import { Tracker, Ulids, ackWindow, reachability, respondCommand } from './command.js';
import { announce, badge, notify, setupNotifications } from './notify.js';
import { captureOf } from './summary.js';
import { FleetView } from './views/fleet.js';
import { SessionView } from './views/session.js';
import { RequestCard } from './views/request.js';

const $ = (id) => document.getElementById(id);
const opened = Date.now();

const app = {
  token: loadToken(),
  fleet: new Fleet(),
  tracker: new Tracker(),
  ulids: new Ulids((n) => crypto.getRandomValues(new Uint8Array(n))),
  roster: [],
  socket: null,
  socketReady: false,
  stream: null,
  cards: new Map(),
  notices: [],
  route: '/',
  view: null,
  now: () => Date.now(),
  sessionHref: (key) => `#/session/${encodeURIComponent(key)}`,
  announce: (text) => announce($('announcer'), text),
};

app.reach = (request) => reachability(request, { token: app.token, socketReady: app.socketReady, roster: app.roster });

app.cardFor = (request) => {
  let card = app.cards.get(request.key);
  if (!card) {
    card = new RequestCard(request, app);
    app.cards.set(request.key, card);
  }
  return card;
};

/** Sends an answer to `request`; the command record, or why not. */
app.send = (request, answer, capture) => {
  const now = Date.now();
  const command = respondCommand(request.event, answer, { id: app.ulids.next(now), nowMs: now, capture });
  const line = JSON.stringify(command);
  if (!app.socket || !app.socket.send(line)) return 'the control socket is not connected; try again when it is.';
  const windowMs = ackWindow(request.session, app.roster) ?? undefined;
  const record = app.tracker.send(command.id, line, request.key, now, windowMs);
  schedule();
  return record;
};

app.retry = (id) => {
  const line = app.tracker.retry(id, Date.now());
  if (line && app.socket && !app.socket.send(line)) {
    // Not sent: back to the state it was in, with the reason.
    const record = app.tracker.sent.get(id);
    record.state = 'refused';
    record.reason = 'not-connected';
    record.detail = 'the control socket is not connected';
  }
  schedule();
};

// ---- rendering, coalesced to one pass per frame ----

let scheduled = false;
function schedule() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(render);
}

function render() {
  scheduled = false;
  for (const card of app.cards.values()) card.update();
  if (app.view) app.view.update();
  badge(app.fleet.inbox().length);
}

function route() {
  const hash = window.location.hash.replace(/^#/, '') || '/';
  app.route = hash;
  const main = $('view');
  const m = /^\/session\/(.+)$/.exec(hash);
  if (m) {
    let key;
    try {
      key = decodeURIComponent(m[1]);
    } catch {
      key = null;
    }
    app.view = new SessionView(app, key);
  } else {
    app.view = new FleetView(app);
  }
  replace(main, app.view.el);
  render();
  if (m) app.view.title.focus();
}

// ---- the posture line: can this page answer, and if not, why ----

function posture() {
  const line = $('posture');
  if (!app.token) {
    line.textContent = 'Watch-only: no token. A relay takes answers only over an authenticated connection, so answering is off here. Add the token to answer.';
    line.className = 'posture watch-only';
  } else if (!app.socketReady) {
    line.textContent = 'Answering: connecting the control socket…';
    line.className = 'posture';
  } else {
    line.textContent = 'Answering is on: answers go to each session’s owner through the relay.';
    line.className = 'posture answering';
  }
  $('token-forget').hidden = !app.token;
  $('token-add').hidden = Boolean(app.token);
}

// ---- the event stream ----

function onEvent(text) {
  const result = app.fleet.ingest(text);
  if (result.status !== 'new') {
    if (result.status === 'collision') schedule();
    return;
  }
  const event = result.event;
  const settled = app.tracker.onEvent(event);
  if (settled) app.announce(settled.state === 'accepted' ? 'The agent accepted the answer.' : `The agent rejected the answer: ${settled.reason || ''}.`);
  if (event.type === 'attention.requested') arrived(event);
  schedule();
}

/** A new request: announce it; notify when it is new to the world,
 * not only to this page (a replay of old requests stays quiet). */
function arrived(event) {
  const d = event.data && typeof event.data === 'object' ? event.data : {};
  const prompt = typeof d.prompt === 'string' ? d.prompt : '';
  const shown = captureOf(event) === 'metadata' ? `${d.kind || 'request'} (placeholder text)` : prompt;
  const text = `New ${d.kind || ''} request from ${event.agent} in ${event.session}: ${shown}`;
  app.announce(text);
  const at = Date.parse(event.time);
  if (Number.isFinite(at) && at >= opened - 5_000) notify(`${event.agent} is waiting on you`, shown, event.id);
  if (app.socket) app.socket.refreshRoster();
}

function streamState(state, detail) {
  const el = $('stream-state');
  el.textContent = { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting', unauthorized: 'needs a token', error: 'error' }[state] || state;
  el.dataset.state = state;
  el.title = detail || '';
  if (state === 'unauthorized') {
    if (app.token) {
      app.notices.push('The relay refused this token. Enter the right one.');
      app.token = null;
      saveToken(null);
      posture();
    }
    askToken('This relay requires a token to watch. Enter it to continue.');
  }
  schedule();
}

function startStream() {
  if (app.stream) app.stream.stop();
  app.stream = new EventStream(app.token, {
    event: onEvent,
    state: streamState,
    notice: (text) => {
      app.notices.push(text);
      schedule();
    },
  });
  app.stream.start();
}

// ---- the control socket ----

function startSocket() {
  if (app.socket) app.socket.stop();
  app.socket = null;
  app.socketReady = false;
  if (!app.token) {
    $('socket-state').textContent = 'off (no token)';
    posture();
    return;
  }
  app.socket = new ControlSocket(app.token, {
    state: (state, detail) => {
      app.socketReady = state === 'ready';
      const el = $('socket-state');
      el.textContent = { connecting: 'connecting…', ready: 'ready', reconnecting: 'reconnecting' }[state] || state;
      el.dataset.state = state;
      el.title = detail || '';
      posture();
      schedule();
    },
    roster: (entries) => {
      app.roster = entries;
      schedule();
    },
    frame: (frame) => {
      const settled = app.tracker.onFrame(frame);
      if (settled) app.announce(`The relay refused the answer: ${settled.reason}.`);
      else if (typeof frame.detail === 'string') app.notices.push(`The relay said: ${frame.code || 'error'}: ${frame.detail}`);
      schedule();
    },
  });
  app.socket.start();
}

// ---- the token ----

function askToken(why) {
  const form = $('token-form');
  $('token-why').textContent = why;
  form.hidden = false;
  $('token-input').focus();
}

function useToken(token) {
  app.token = token || null;
  saveToken(app.token);
  $('token-form').hidden = true;
  posture();
  startStream();
  startSocket();
  schedule();
}

$('token-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const value = $('token-input').value.trim();
  $('token-input').value = '';
  if (value) useToken(value);
});
$('token-cancel').addEventListener('click', () => {
  $('token-form').hidden = true;
});
$('token-add').addEventListener('click', () => askToken('Enter the relay’s token to answer requests from this page. It is kept for this tab only.'));
$('token-forget').addEventListener('click', () => useToken(null));

setupNotifications($('notify'), app.announce);
window.addEventListener('hashchange', route);
setInterval(() => {
  for (const c of app.tracker.expire(Date.now())) app.announce(`No acknowledgement for answer ${c.id} within the window: timed out.`);
  schedule();
}, 1_000);

posture();
route();
startStream();
startSocket();
