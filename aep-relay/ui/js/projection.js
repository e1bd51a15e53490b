// The fleet the page shows, folded from the events it reads, with the
// state projection's rules (the same as the `aep` crate's and the
// published SDKs'): dedupe on (source, id), sessions keyed by
// (source, session), runs and their one terminal, pending attention
// cleared only by `attention.resolved`/`attention.timeout`, one
// `session.ended`, positions that only go forward. What breaks a rule is
// recorded as a violation, never hidden. Pure: no DOM, no network.

/** Whether `type` is a command (AEP-0004 §2): it names its target's
 * session under the sender's source, so it folds no session state. */
export function isCommand(type) {
  return /^control\.(attention\.respond|cancel|pause|resume)$/.test(type) || /^x\.[^.]+\.control\./.test(type);
}

const TERMINAL = { 'run.finished': 'finished', 'run.failed': 'failed', 'run.cancelled': 'cancelled' };

/** JSON with object members in name order: equal events, equal text. */
export function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

// A 53-bit hash (cyrb53), to remember events cheaply: its state, fed a
// string at a time (one hash at a time: the page has one thread).
let h1 = 0;
let h2 = 0;

function begin() {
  h1 = 0xdeadbeef;
  h2 = 0x41c6ce57;
}

function feed(text) {
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
}

function end() {
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** The hash of a string. */
export function hash(text) {
  begin();
  feed(text);
  return end();
}

function feedCode(c) {
  h1 = Math.imul(h1 ^ c, 2654435761);
  h2 = Math.imul(h2 ^ c, 1597334677);
}

/** How JSON.stringify writes the control characters it names. */
const SHORT = { 8: 'b', 9: 't', 10: 'n', 12: 'f', 13: 'r' };

/** Feeds the hash `JSON.stringify(text)` for a string, in one pass: the
 * characters JSON escapes (`"`, `\\`, controls, unpaired surrogates)
 * as JSON.stringify writes them, the others as themselves. */
function feedString(text) {
  feedCode(34);
  const n = text.length;
  for (let i = 0; i < n; i += 1) {
    const c = text.charCodeAt(i);
    if (c >= 0x20 && c !== 34 && c !== 92 && (c < 0xd800 || c > 0xdfff)) {
      h1 = Math.imul(h1 ^ c, 2654435761);
      h2 = Math.imul(h2 ^ c, 1597334677);
    } else if (c === 34 || c === 92) {
      feedCode(92);
      feedCode(c);
    } else if (c < 0x20) {
      feed(c in SHORT ? `\\${SHORT[c]}` : `\\u${c.toString(16).padStart(4, '0')}`);
    } else if (c <= 0xdbff && i + 1 < n && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // A surrogate pair: as itself.
      feedCode(c);
      feedCode(text.charCodeAt(i + 1));
      i += 1;
    } else {
      feed(`\\u${c.toString(16)}`); // an unpaired surrogate
    }
  }
  feedCode(34);
}

/** Feeds the hash `canonical(value)`'s text, a piece at a time. */
function feedCanonical(value) {
  if (typeof value === 'string') {
    feedString(value);
  } else if (Array.isArray(value)) {
    feedCode(91); // [
    for (let i = 0; i < value.length; i += 1) {
      if (i) feedCode(44); // ,
      feedCanonical(value[i]);
    }
    feedCode(93); // ]
  } else if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    feedCode(123); // {
    for (let i = 0; i < keys.length; i += 1) {
      if (i) feedCode(44); // ,
      feedString(keys[i]);
      feedCode(58); // :
      feedCanonical(value[keys[i]]);
    }
    feedCode(125); // }
  } else {
    feed(String(JSON.stringify(value)));
  }
}

/** `hash(canonical(value))`, for a value read from JSON, without building
 * the canonical text (the costliest part of taking an event in): equal
 * events, whatever their members' order, give equal fingerprints. */
export function fingerprint(value) {
  begin();
  feedCanonical(value);
  return end();
}

/** The key of a session or of a request: two strings, unambiguously. */
export function key(a, b) {
  return JSON.stringify([a, b]);
}

function text(value) {
  return typeof value === 'string' && value !== '' ? value : null;
}

export class Fleet {
  /** `keep`: events kept per session timeline (older ones are counted). */
  constructor({ keep = 2000 } = {}) {
    this.keep = keep;
    /** Fingerprints of the events seen, by source, then id. */
    this.seen = new Map();
    /** Sessions by key, and the same sessions by source, then session. */
    this.sessions = new Map();
    this.bySource = new Map();
    this.requests = new Map();
    this.violations = [];
    this.unreadable = 0;
    /** Commands by id, and the events that name each id as `cause`. */
    this.commands = new Map();
    this.effects = new Map();
    /** Commands for a session name no session of which is known yet. */
    this.orphans = new Map();
  }

  /**
   * Folds one event's JSON text. Returns `{status}`: `new` (with
   * `event`), `duplicate` (the same event again: dropped), `collision`
   * (another event under a seen (source, id): dropped, a violation) or
   * `invalid` (not an event: counted).
   */
  ingest(line) {
    let event;
    try {
      event = JSON.parse(line);
    } catch {
      this.unreadable += 1;
      return { status: 'invalid' };
    }
    if (!event || typeof event !== 'object' || Array.isArray(event) || !text(event.id) || !text(event.type) || !text(event.source)) {
      this.unreadable += 1;
      return { status: 'invalid' };
    }
    let seen = this.seen.get(event.source);
    if (seen === undefined) {
      seen = new Map();
      this.seen.set(event.source, seen);
    }
    const print = fingerprint(event);
    const before = seen.get(event.id);
    if (before !== undefined) {
      if (before === print) return { status: 'duplicate', event };
      this.violations.push({ rule: 'id-collision', source: event.source, id: event.id });
      return { status: 'collision', event };
    }
    seen.set(event.id, print);
    if (text(event.cause)) {
      if (!this.effects.has(event.cause)) this.effects.set(event.cause, []);
      this.effects.get(event.cause).push(event);
    }
    if (isCommand(event.type)) {
      this.commands.set(event.id, event);
      this.attachForeign(event);
      return { status: 'new', event };
    }
    if (event.type === 'attention.routed') this.attachForeign(event);
    if (event.type.startsWith('agent.') || !text(event.session) || event.type === 'attention.routed') {
      return { status: 'new', event };
    }
    this.fold(event);
    return { status: 'new', event };
  }

  /** A command or routing note belongs in every timeline of its session
   * name (the sender's source is not the session's). */
  attachForeign(event) {
    const name = text(event.session);
    if (!name) return;
    let attached = false;
    for (const s of this.sessions.values()) {
      if (s.session === name) {
        this.push(s, event);
        attached = true;
      }
    }
    if (!attached) {
      if (!this.orphans.has(name)) this.orphans.set(name, []);
      this.orphans.get(name).push(event);
    }
  }

  session(event) {
    let sessions = this.bySource.get(event.source);
    if (sessions === undefined) {
      sessions = new Map();
      this.bySource.set(event.source, sessions);
    }
    let s = sessions.get(event.session);
    if (!s) {
      const k = key(event.source, event.session);
      s = {
        key: k,
        source: event.source,
        session: event.session,
        agent: text(event.agent) || '',
        started: null,
        ended: null,
        position: null,
        runs: new Map(),
        pending: [],
        requests: [],
        timeline: [],
        dropped: 0,
        last: null,
        label: null,
      };
      this.sessions.set(k, s);
      sessions.set(event.session, s);
      for (const orphan of this.orphans.get(event.session) || []) this.push(s, orphan);
      this.orphans.delete(event.session);
    }
    return s;
  }

  push(s, event) {
    s.timeline.push(event);
    if (s.timeline.length > this.keep) {
      s.timeline.shift();
      s.dropped += 1;
    }
  }

  fold(event) {
    const s = this.session(event);
    const where = { source: s.source, session: s.session };
    this.push(s, event);
    const time = Date.parse(event.time);
    if (Number.isFinite(time) && (s.last === null || time > s.last)) s.last = time;

    const run = text(event.run);
    if (run) {
      if (event.type === 'run.started' && !s.runs.has(run)) {
        s.runs.set(run, { run, status: 'running', started: event.time ?? null, ended: null });
      }
      const terminal = TERMINAL[event.type];
      if (terminal) {
        const known = s.runs.get(run);
        if (!known) s.runs.set(run, { run, status: terminal, started: null, ended: event.time ?? null });
        else if (known.status !== 'running') this.violations.push({ rule: 'run-terminal-exclusivity', ...where, run });
        else {
          known.status = terminal;
          known.ended = event.time ?? null;
        }
      }
    }

    const data = event.data && typeof event.data === 'object' ? event.data : {};
    if (event.type === 'attention.requested') {
      const k = key(event.source, event.id);
      const request = {
        key: k,
        id: event.id,
        source: event.source,
        session: event.session,
        sessionKey: s.key,
        event,
        kind: typeof data.kind === 'string' ? data.kind : null,
        since: event.time ?? null,
        state: 'pending',
        answered: null,
        closedBy: null,
        /** Set when its session ended while it was pending: nobody can
         * answer it any more (closed without an answer). */
        sessionEnded: s.ended,
      };
      this.requests.set(k, request);
      if (!s.requests.includes(k)) s.requests.push(k);
      if (!s.pending.includes(k)) s.pending.push(k);
    } else if (event.type.startsWith('attention.') && text(event.subject)) {
      const request = this.requests.get(key(event.source, event.subject));
      if (event.type === 'attention.answered' && request) request.answered = event;
      if (event.type === 'attention.resolved' || event.type === 'attention.timeout') {
        const k = key(event.source, event.subject);
        s.pending = s.pending.filter((p) => p !== k);
        if (request) {
          request.state = event.type === 'attention.timeout' ? 'timeout' : 'resolved';
          request.closedBy = event;
        }
      }
    }

    if (event.type === 'session.started') {
      if (s.started === null) s.started = event.time ?? null;
      if (typeof data.label === 'string') s.label = data.label;
    }
    if (event.type === 'session.ended') {
      if (s.pending.length) this.violations.push({ rule: 'ended-with-pending-attention', ...where, pending: s.pending.length });
      if (s.ended !== null) this.violations.push({ rule: 'session-terminal-exclusivity', ...where });
      else {
        s.ended = event.time ?? null;
        for (const k of s.pending) {
          const request = this.requests.get(k);
          if (request && request.sessionEnded === null) request.sessionEnded = event.time ?? '';
        }
      }
    }

    if (Number.isInteger(event.seq)) {
      const epoch = Number.isInteger(event.epoch) ? event.epoch : 0;
      const last = s.position;
      if (last && epoch < last.epoch) this.violations.push({ rule: 'epoch-regression', ...where, id: event.id });
      else if (last && epoch === last.epoch && event.seq <= last.seq) this.violations.push({ rule: 'seq-regression', ...where, id: event.id });
      s.position = { epoch, seq: event.seq };
    }
  }

  /** running, waiting (on a person) or ended. */
  static state(s) {
    if (s.ended !== null) return 'ended';
    if (s.pending.length) return 'waiting';
    return 'running';
  }

  /** Every pending request of a session that has not ended (the ones
   * a person can still answer), newest first. */
  inbox() {
    return this.pendingWhere((r) => r.sessionEnded === null);
  }

  /** The requests still pending when their session ended: closed
   * without an answer (kept findable, no longer waiting), newest first. */
  closedUnanswered() {
    return this.pendingWhere((r) => r.sessionEnded !== null);
  }

  pendingWhere(keep) {
    const all = [];
    for (const s of this.sessions.values()) for (const k of s.pending) all.push(this.requests.get(k));
    return all.filter((r) => r && keep(r)).sort((a, b) => (Date.parse(b.since) || 0) - (Date.parse(a.since) || 0));
  }

  /** The events whose `cause` is `id`, and those one hop further through
   * an ack (AEP-0004 §6: outcomes may name the ack). */
  outcomes(id) {
    const direct = this.effects.get(id) || [];
    const out = [...direct];
    for (const ack of direct) {
      if (ack.type === 'control.accepted' || ack.type === 'control.rejected') out.push(...(this.effects.get(ack.id) || []));
    }
    return out;
  }
}
