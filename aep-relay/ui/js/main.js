// The page: reads the relay's events over /stream into the fleet
// projection, shows the fleet, the inbox and each session, and sends
// answers over /socket. Only the relay's public surfaces are used.

import { h, replace } from './dom.js';
import { loadToken, saveToken, stripToken } from './token.js';
import { EventStream } from './stream.js';
import { ControlSocket } from './socket.js';
import { Fleet } from './projection.js';
import { Tracker, Ulids, ackWindow, reachability, respondCommand } from './command.js';
import { announce, badge, notify, setupNotifications } from './notify.js';
import { captureOf } from './summary.js';
import { linkOf, routedOf } from './status.js';
import { measure } from './perf.js';
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
  /** Whether the relay routes answers (its discovery document's
   * `control.routed`): false on a relay started without a token; null
   * until known. */
  routed: null,
  /** The link to the relay, for the empty states (see status.js). */
  link: 'connecting',
  stream: null,
  cards: new Map(),
  notices: [],
  route: '/',
  view: null,
  now: () => Date.now(),
  sessionHref: (key) => `#/session/${encodeURIComponent(key)}`,
  announce: (text) => announce($('announcer'), text),
};

app.reach = (request) => reachability(request, { token: app.token, socketReady: app.socketReady, roster: app.roster, routed: app.routed });

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
  // No socket (the token forgotten, a relay that routes no answers) is
  // not sent either.
  if (line && !(app.socket && app.socket.send(line))) {
    // Not sent: back to the state it was in, with the reason.
    const record = app.tracker.sent.get(id);
    record.state = 'refused';
    record.reason = 'not-connected';
    record.detail = 'the control socket is not connected';
  }
  schedule();
};

// ---- rendering, coalesced to one pass per frame ----
// The fold takes each event as it arrives (cheap); drawing is what costs.
// A view that could not draw everything within a frame's budget (see
// pace.js) says so, and the rest is drawn in the next frame.

let scheduled = false;
function schedule() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(render);
}

function render() {
  const start = performance.now();
  scheduled = false;
  for (const card of app.cards.values()) card.update();
  if (app.view && app.view.update()) schedule();
  // Only what a person can still answer: not the requests of ended sessions.
  badge(app.fleet.inbox().length);
  measure('aep:render', start);
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
  if (app.routed === false) {
    line.textContent = 'Watch-only: answering is off because this relay was started without a token, so it passes no answers on to agents. Restart it with a token (AEP_TOKEN) to answer from this page.';
    line.title = 'A relay routes commands only over authenticated connections (AEP-0004 §4.1).';
    line.className = 'posture watch-only';
  } else if (!app.token) {
    line.textContent = 'Watch-only: no token. A relay takes answers only over an authenticated connection, so answering is off here. Add the token to answer.';
    line.className = 'posture watch-only';
  } else if (!app.socketReady) {
    line.textContent = 'Answering: connecting the control socket…';
    line.className = 'posture';
  } else {
    line.textContent = 'Answering is on: answers go to each session’s owner through the relay.';
    line.className = 'posture answering';
  }
  if (app.routed !== false) line.removeAttribute('title');
  $('token-forget').hidden = !app.token;
  // A relay without a token needs none: adding one changes nothing.
  $('token-add').hidden = Boolean(app.token) || app.routed === false;
}

/** Asks the relay whether it routes answers (its discovery document,
 * with the token when the page has one). A refusal leaves it unknown:
 * the stream then says what is wrong with the token. */
async function discover() {
  const headers = { Accept: 'application/json' };
  if (app.token) headers.Authorization = `Bearer ${app.token}`;
  let routed = null;
  try {
    const response = await fetch('/.well-known/aep', { headers, cache: 'no-store' });
    if (response.ok) routed = routedOf(await response.json());
  } catch {
    routed = null;
  }
  if (routed === app.routed) return;
  app.routed = routed;
  if (routed === false) startSocket();
  posture();
  schedule();
}

/** The token warning at the top of the page, or none. */
function tokenAlert(text) {
  const el = $('token-alert');
  el.textContent = text || '';
  el.hidden = !text;
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
  app.link = linkOf(state, Boolean(app.token));
  if (state === 'live') tokenAlert(null);
  if (state === 'unauthorized') {
    if (app.token) {
      tokenAlert('The relay refused the token this page was given: wrong token. Enter the right one.');
      app.token = null;
      saveToken(null);
      // The refused token is not tried again on the control socket either.
      startSocket();
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
  if (app.routed === false) {
    $('socket-state').textContent = 'off (this relay routes no answers)';
    posture();
    return;
  }
  if (!app.token) {
    $('socket-state').textContent = 'off (no token)';
    posture();
    return;
  }
  const socket = new ControlSocket(app.token, {
    state: (state, detail) => {
      if (app.socket !== socket) return;
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
  app.socket = socket;
  socket.start();
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
  app.link = 'connecting';
  posture();
  startStream();
  startSocket();
  discover();
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
// A token address pasted into this open tab: the token is taken as at
// load (kept for the tab) and removed from the address bar at once. An
// address that names no page but the token (`#token=...`, as
// `--print-ui-url` prints it) leaves the tab on the page it showed; one
// that names a page (`#/session/...&token=...`) goes there.
window.addEventListener('hashchange', () => {
  const { found, token, bad } = stripToken();
  if (found) {
    if (token) useToken(token);
    else if (bad) tokenAlert('The token in the address was not readable; it was not used.');
    if (window.location.hash.replace(/^#/, '') === '' && app.route !== '/') {
      window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}#${app.route}`);
    }
    if ((window.location.hash.replace(/^#/, '') || '/') === app.route) return;
  }
  route();
});
setInterval(() => {
  for (const c of app.tracker.expire(Date.now())) app.announce(`No acknowledgement for answer ${c.id} within the window: timed out.`);
  schedule();
}, 1_000);

posture();
route();
startStream();
startSocket();
discover();
