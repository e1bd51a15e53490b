// The page's reading side: /stream over fetch (the token in a header),
// from every held session at first, then resumed from the last delivered
// position of each session after any break, with bounded backoff. A
// session first seen after a break is read once from its start (a
// history read), since a resume names only the sessions it knew.

import { SseParser, parseEventId, parseExhausted, resumeFrom } from './sse.js';
import { measure } from './perf.js';

/** Silence (no event, no `: ping`) after which the stream is restarted. */
const STALL_MS = 50_000;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 10_000;
/** The longest the reading side takes the page's thread for before it
 * lets the page draw and answer input: a replay of a large relay comes
 * in faster than it is taken in, and without a pause nothing is drawn
 * until all of it is (a frame needs a task boundary, and a chunk already
 * received is handed over without one). */
const SLICE_MS = 50;

/** Gives the thread back for a moment: a message to itself, so the
 * reading goes on in a new task queued behind the others (drawing, input,
 * the control socket, timers). Unlike `setTimeout`, it is not slowed down
 * in a background tab; unlike `scheduler.yield`, it goes behind what
 * waits rather than ahead of it. */
function pause() {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}

export class EventStream {
  /**
   * `handlers`: `event(text)` for each delivered event's JSON text,
   * `state(state, detail)` with state `connecting`, `live`,
   * `reconnecting`, `unauthorized` or `error`, and `notice(text)` for what
   * the relay said in comments (`replay-exhausted`, back-pressure).
   */
  constructor(token, handlers) {
    this.token = token;
    this.handlers = handlers;
    this.positions = new Map();
    this.known = new Set();
    this.resumed = false;
    this.backoff = BACKOFF_MIN_MS;
    this.stopped = false;
    this.controller = null;
    this.forceAll = false;
    /** Sessions being filled in: their live events wait here meanwhile,
     * so the fold sees the session in order. */
    this.filling = new Map();
    /** The history reads under way, each stopped with the stream. */
    this.histories = new Set();
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    if (this.controller) this.controller.abort();
    for (const controller of this.histories) controller.abort();
  }

  headers() {
    const headers = { Accept: 'text/event-stream' };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    return headers;
  }

  async connect() {
    if (this.stopped) return;
    const from = this.forceAll || !this.resumed ? 'all' : resumeFrom(this.positions);
    this.forceAll = false;
    this.handlers.state(this.resumed ? 'reconnecting' : 'connecting', '');
    const controller = new AbortController();
    this.controller = controller;
    let stall = null;
    const arm = () => {
      clearTimeout(stall);
      stall = setTimeout(() => controller.abort(), STALL_MS);
    };
    let delivered = false;
    try {
      arm();
      const response = await fetch(`/stream?from=${encodeURIComponent(from)}`, {
        headers: this.headers(),
        signal: controller.signal,
        cache: 'no-store',
      });
      if (response.status === 401) {
        clearTimeout(stall);
        this.handlers.state('unauthorized', 'the relay wants a token');
        return;
      }
      if (!response.ok || !response.body) {
        const detail = await response.text().catch(() => '');
        if (response.status === 400 && from !== 'all') this.forceAll = true;
        throw new Error(`HTTP ${response.status} ${detail}`.trim());
      }
      this.handlers.state('live', from === 'all' ? 'from every held session' : 'resumed');
      const resumedNow = this.resumed;
      this.resumed = true;
      await this.read(response.body, (message) => {
        arm();
        delivered = true;
        if (message.kind === 'comment') return this.comment(message.text);
        this.deliver(message, resumedNow);
      });
      throw new Error('the stream ended');
    } catch (e) {
      clearTimeout(stall);
      if (this.stopped) return;
      if (delivered) this.backoff = BACKOFF_MIN_MS;
      const wait = this.backoff;
      this.backoff = Math.min(this.backoff * 2, BACKOFF_MAX_MS);
      this.handlers.state('reconnecting', `${e.message || e}; again in ${Math.round(wait / 100) / 10} s`);
      setTimeout(() => this.connect(), wait);
    }
  }

  async read(body, each) {
    const reader = body.getReader();
    const decoder = new TextDecoder('utf-8');
    const parser = new SseParser();
    let slice = performance.now();
    for (;;) {
      if (performance.now() - slice > SLICE_MS) {
        await pause();
        if (this.stopped) return;
        slice = performance.now();
      }
      // The stages of reading, as performance measures (see docs/ui.md):
      // waiting for a chunk, parsing it, delivering its events.
      const waited = performance.now();
      const { value, done } = await reader.read();
      const read = performance.now();
      measure('aep:read', waited);
      if (done) return;
      const messages = parser.push(decoder.decode(value, { stream: true }));
      let parsed = performance.now();
      measure('aep:sse', read);
      // A chunk may hold thousands of events (a replay comes in chunks of
      // megabytes): the pauses are taken between its events too, and a
      // stream stopped meanwhile delivers no more of them.
      for (const message of messages) {
        if (performance.now() - slice > SLICE_MS) {
          measure('aep:deliver', parsed);
          await pause();
          if (this.stopped) return;
          slice = performance.now();
          parsed = slice;
        }
        each(message);
      }
      measure('aep:deliver', parsed);
    }
  }

  comment(text) {
    if (text === 'ping') return;
    const exhausted = parseExhausted(text);
    if (exhausted) {
      this.handlers.notice(
        `The relay no longer holds part of session ${exhausted.session}: its earliest held position is ${exhausted.epoch}:${exhausted.seq}. Earlier events are missing here.`,
      );
    } else if (text === 'shutting-down') {
      this.handlers.notice('The relay is shutting down; the page will resume when it is back.');
    } else if (text.startsWith('disconnected')) {
      this.handlers.notice(`The relay cut this stream off (${text}); resuming from the last position.`);
    }
  }

  deliver(message, onResumedStream) {
    const position = message.id ? parseEventId(message.id) : null;
    let session = position ? position.session : null;
    if (position) this.positions.set(position.session, { epoch: position.epoch, seq: position.seq });
    if (!session) {
      try {
        session = JSON.parse(message.data).session ?? null;
      } catch {
        session = null;
      }
    }
    if (typeof session === 'string' && this.filling.has(session)) {
      this.filling.get(session).push(message.data);
      return;
    }
    if (typeof session === 'string' && !this.known.has(session)) {
      this.known.add(session);
      if (onResumedStream) {
        this.filling.set(session, [message.data]);
        this.history(session);
        return;
      }
    }
    this.handlers.event(message.data);
  }

  /** Reads one session's whole buffer (`live=0`), for a session that
   * appeared while the page was not connected. */
  async history(session) {
    const filter = encodeURIComponent(JSON.stringify({ session }));
    const controller = new AbortController();
    this.histories.add(controller);
    try {
      const response = await fetch(`/stream?live=0&filter=${filter}`, {
        headers: this.headers(),
        signal: controller.signal,
        cache: 'no-store',
      });
      if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
      await this.read(response.body, (message) => {
        if (message.kind === 'message') this.handlers.event(message.data);
      });
    } catch (e) {
      if (!this.stopped) this.handlers.notice(`Could not read the start of session ${session} (${e.message || e}); its earlier events are missing here.`);
    } finally {
      this.histories.delete(controller);
      // A stopped stream delivers nothing more (a new one reads again).
      const waiting = this.stopped ? [] : this.filling.get(session) || [];
      this.filling.delete(session);
      for (const text of waiting) this.handlers.event(text);
    }
  }
}
