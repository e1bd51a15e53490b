// The page's control side: the /socket WebSocket with the token, as a
// `consumer` (it claims no session), for sending commands, reading the
// relay's `error` frames about them, and asking the `roster` (who owns
// which session, and what each owner accepts). Events are read from
// /stream, not here.

const ROSTER_EVERY_MS = 3_000;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 10_000;

export class ControlSocket {
  /** `handlers`: `state(state, detail)` (`connecting`, `ready`,
   * `reconnecting`), `roster(entries)`, `frame(frame)` for `error` frames. */
  constructor(token, handlers) {
    this.token = token;
    this.handlers = handlers;
    this.ws = null;
    this.ready = false;
    this.stopped = false;
    this.backoff = BACKOFF_MIN_MS;
    this.rosterSerial = 0;
    this.timer = null;
    this.rosterSoon = null;
    this.instance = `aep-ui/${Math.random().toString(36).slice(2, 10)}`;
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearInterval(this.timer);
    if (this.ws) this.ws.close(1000, 'page closed');
  }

  connect() {
    if (this.stopped) return;
    const scheme = window.location.protocol === 'https:' ? 'wss' : 'ws';
    const url = `${scheme}://${window.location.host}/socket?access_token=${encodeURIComponent(this.token)}`;
    this.handlers.state('connecting', '');
    let ws;
    try {
      ws = new WebSocket(url);
    } catch (e) {
      this.retry(String(e.message || e));
      return;
    }
    this.ws = ws;
    ws.addEventListener('open', () => {
      ws.send(JSON.stringify({
        type: 'hello',
        versions: ['0.1'],
        role: 'consumer',
        identity: { agent: 'aep-ui', instance: this.instance },
      }));
    });
    ws.addEventListener('message', (m) => this.onMessage(m.data));
    ws.addEventListener('close', (e) => {
      if (this.ws !== ws) return;
      this.ready = false;
      clearInterval(this.timer);
      this.retry(e.reason || `closed (${e.code})`);
    });
  }

  retry(why) {
    if (this.stopped) return;
    const wait = this.backoff;
    this.backoff = Math.min(this.backoff * 2, BACKOFF_MAX_MS);
    this.handlers.state('reconnecting', `${why}; again in ${Math.round(wait / 100) / 10} s`);
    setTimeout(() => this.connect(), wait);
  }

  onMessage(data) {
    if (this.stopped) return;
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    if (!frame || typeof frame.type !== 'string') return;
    switch (frame.type) {
      case 'hello':
        this.ready = true;
        this.backoff = BACKOFF_MIN_MS;
        this.handlers.state('ready', '');
        this.refreshRoster();
        clearInterval(this.timer);
        this.timer = setInterval(() => this.refreshRoster(), ROSTER_EVERY_MS);
        break;
      case 'roster':
        if (Array.isArray(frame.entries)) this.handlers.roster(frame.entries);
        break;
      case 'ping':
        this.raw({ type: 'pong', t: frame.t ?? null });
        break;
      case 'error':
        this.handlers.frame(frame);
        break;
      default:
    }
  }

  raw(frame) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  /** Asks the relay who owns which session now (at most one question
   * in flight per 250 ms: a replay of many requests asks once). */
  refreshRoster() {
    if (!this.ready || this.rosterSoon) return;
    this.rosterSoon = setTimeout(() => {
      this.rosterSoon = null;
      if (!this.ready) return;
      this.rosterSerial += 1;
      this.raw({ type: 'roster', id: `roster-${this.rosterSerial}` });
    }, this.rosterSerial === 0 ? 0 : 250);
  }

  /** Sends a command's text; false when the socket is not ready. */
  send(line) {
    if (!this.ready || !this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(line);
    return true;
  }
}
