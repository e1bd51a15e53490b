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
    this.buffer += chunk;
    const out = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) break;
      // A CR at the very end may be the first half of a CRLF.
      if (match[0] === '\r' && match.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.line(line, out);
    }
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
    if (line.startsWith(':')) {
      out.push({ kind: 'comment', text: line.slice(1).replace(/^ /, '') });
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
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
  const m = /^(.*):(\d+):(\d+)$/s.exec(String(id ?? ''));
  if (!m || m[1] === '') return null;
  return { session: m[1], epoch: Number(m[2]), seq: Number(m[3]) };
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
