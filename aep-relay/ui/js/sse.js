// The Server-Sent Events wire format, parsed by hand (the page reads
// /stream with fetch, so it can send the token in a header and see the
// relay's comments: `replay-exhausted`, `shutting-down`, back-pressure).
// Pure: no DOM, no network.

/** An incremental SSE parser: `push` text as it arrives, get messages. */
export class SseParser {
  constructor() {
    this.buffer = '';
    this.reset();
  }

  reset() {
    this.data = null;
    this.event = '';
    this.id = null;
  }

  /**
   * Feeds a chunk; returns what it completed, in order:
   * `{kind: 'message', event, data, id}` (id null when the message had
   * none) and `{kind: 'comment', text}`.
   */
  push(chunk) {
    // Only the unfinished line left from the chunk before is joined to
    // this one; the lines are found with indexOf and cut out once each.
    const text = this.buffer === '' ? chunk : this.buffer + chunk;
    const n = text.length;
    const out = [];
    let start = 0;
    // The next LF and CR at or after `start` (-1: none in the text).
    let lf = -2;
    let cr = -2;
    for (;;) {
      if (lf !== -1 && lf < start) lf = text.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = text.indexOf('\r', start);
      let end;
      let next;
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        if (lf === -1) break;
        end = lf;
        next = lf + 1;
      } else {
        // A CR at the very end may be the first half of a CRLF.
        if (cr === n - 1) break;
        end = cr;
        next = text.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
      }
      this.line(text.slice(start, end), out);
      start = next;
    }
    this.buffer = start === 0 ? text : text.slice(start);
    return out;
  }

  line(line, out) {
    if (line === '') {
      if (this.data !== null) {
        out.push({ kind: 'message', event: this.event || 'message', data: this.data, id: this.id });
      }
      this.reset();
      return;
    }
    const colon = line.indexOf(':');
    // One space after the colon is not part of the value.
    const value = colon < 0 ? '' : line.slice(line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1);
    if (colon === 0) {
      out.push({ kind: 'comment', text: value });
      return;
    }
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field === 'data') this.data = this.data === null ? value : `${this.data}\n${value}`;
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.id = value;
  }
}

/**
 * An SSE `id:` of the relay, `session:epoch:seq`, read from the right
 * (a session id may hold `:`); null when it is not one.
 */
export function parseEventId(id) {
  const text = String(id ?? '');
  const last = text.lastIndexOf(':');
  const middle = last > 0 ? text.lastIndexOf(':', last - 1) : -1;
  if (middle < 1 || !digits(text, middle + 1, last) || !digits(text, last + 1, text.length)) return null;
  return { session: text.slice(0, middle), epoch: Number(text.slice(middle + 1, last)), seq: Number(text.slice(last + 1)) };
}

/** Whether `text[from..to]` is one or more ASCII digits. */
function digits(text, from, to) {
  if (from >= to) return false;
  for (let i = from; i < to; i += 1) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/**
 * The `from` to resume with: every known session after its last
 * delivered position, or `all` when none is known or there are more
 * than `max` (a relay refuses an overlong list).
 */
export function resumeFrom(positions, max = 200) {
  const list = [...positions].map(([session, p]) => ({ session, epoch: p.epoch, seq: p.seq }));
  if (list.length === 0 || list.length > max) return 'all';
  list.sort((a, b) => (a.session < b.session ? -1 : a.session > b.session ? 1 : 0));
  return JSON.stringify(list);
}

/** Parses a `replay-exhausted` comment: `{session, epoch, seq}` or null. */
export function parseExhausted(text) {
  const m = /^replay-exhausted (.*) (\d+):(\d+)$/s.exec(text);
  if (!m) return null;
  let session = m[1];
  if (session.startsWith('"')) {
    try {
      session = JSON.parse(session);
    } catch {
      return null;
    }
  }
  return { session, epoch: Number(m[2]), seq: Number(m[3]) };
}
