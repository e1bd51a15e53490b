// Answering a request: the `control.attention.respond` command event
// (AEP-0004 §5), its id (a ULID), the capture level it honestly carries,
// and the sender's bookkeeping: each command is settled by one ack
// (`control.accepted`/`control.rejected` with `cause` = its id) or a
// relay `error` frame naming it, and silence past the ack window is a
// local timeout, retried with the same id and bytes. Pure: the caller
// passes the clock and the random bytes.

/** The page's identity as a sender. */
export const SOURCE = 'aep://browser/agent/aep-ui';
export const AGENT = 'aep-ui';
/** AEP-0004 §3: the default ack window. */
export const ACK_WINDOW_MS = 10_000;

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** ULIDs that strictly increase, also within one millisecond. */
export class Ulids {
  /** `random(n)` returns n random bytes (a Uint8Array). */
  constructor(random) {
    this.random = random;
    this.last = -1n;
  }

  next(nowMs) {
    const time = BigInt(Math.max(0, Math.min(Math.floor(nowMs), 2 ** 48 - 1)));
    let bits = 0n;
    for (const b of this.random(10)) bits = (bits << 8n) | BigInt(b);
    let id = (time << 80n) | bits;
    if (id <= this.last) id = this.last + 1n;
    this.last = id;
    let out = '';
    for (let i = 0; i < 26; i += 1) {
      out = CROCKFORD[Number(id & 31n)] + out;
      id >>= 5n;
    }
    return out;
  }
}

/**
 * The capture an answer is sent at: `full` when it carries text a person
 * typed (`text`, a string field, an `other` answer), which the page has
 * no redaction pipeline for; `metadata` when it is ids, numbers and
 * booleans only.
 */
export function answerCapture(answer, freeTextInValues) {
  if (typeof answer.text === 'string') return 'full';
  if (answer.values !== undefined && freeTextInValues) return 'full';
  return 'metadata';
}

/**
 * The command answering `request` (an `attention.requested` event):
 * `subject` and `cause` name the request, `session` (and `run`) its
 * session; no `seq` (a sender does not own the target's order).
 */
export function respondCommand(request, answer, { id, nowMs, capture }) {
  const command = {
    aep: '0.1',
    id,
    type: 'control.attention.respond',
    time: new Date(nowMs).toISOString(),
    source: SOURCE,
    agent: AGENT,
    session: request.session,
    subject: request.id,
    cause: request.id,
    capture,
    data: { answer },
  };
  if (typeof request.run === 'string') command.run = request.run;
  return command;
}

/** The commands sent and how each was settled. */
export class Tracker {
  constructor(windowMs = ACK_WINDOW_MS) {
    this.windowMs = windowMs;
    this.sent = new Map();
  }

  /** Records a command (its exact text `line`) sent at `nowMs`; its ack
   * window is `windowMs` when the target declared one, else the default. */
  send(id, line, requestKey, nowMs, windowMs = this.windowMs) {
    this.sent.set(id, { id, line, requestKey, sentAt: nowMs, windowMs, tries: 1, state: 'sent', reason: null, detail: null, ack: null });
    return this.sent.get(id);
  }

  /** Settles from an event (an ack `cause`-matched to a command).
   * Returns the command's record, or null. A late ack after a local
   * timeout still settles it: the target decided. */
  onEvent(event) {
    if (event.type !== 'control.accepted' && event.type !== 'control.rejected') return null;
    const c = this.sent.get(event.cause);
    if (!c || c.state === 'accepted' || c.state === 'rejected') return null;
    c.ack = event;
    if (event.type === 'control.accepted') c.state = 'accepted';
    else {
      c.state = 'rejected';
      const d = event.data && typeof event.data === 'object' ? event.data : {};
      c.reason = typeof d.reason === 'string' ? d.reason : null;
      c.detail = typeof d.detail === 'string' ? d.detail : null;
    }
    return c;
  }

  /** Settles from a relay `error` frame whose `cause` names a command
   * (AEP-0004 §4.2): the relay refused it on the target's behalf. */
  onFrame(frame) {
    if (!frame || frame.type !== 'error' || typeof frame.cause !== 'string') return null;
    const c = this.sent.get(frame.cause);
    if (!c || c.state === 'accepted' || c.state === 'rejected') return null;
    c.state = 'refused';
    c.reason = typeof frame.code === 'string' ? frame.code : 'error';
    c.detail = typeof frame.detail === 'string' ? frame.detail : null;
    return c;
  }

  /** The commands whose window ran out by `nowMs`, now `timeout`. */
  expire(nowMs) {
    const out = [];
    for (const c of this.sent.values()) {
      if (c.state === 'sent' && nowMs - c.sentAt >= c.windowMs) {
        c.state = 'timeout';
        c.reason = 'timeout';
        c.detail = `no acknowledgement within ${Math.round(c.windowMs / 100) / 10} s`;
        out.push(c);
      }
    }
    return out;
  }

  /** A retry: the same id and bytes, a new window. Only a command that
   * may be sent again as it is (`retriable`) is retried; returns its
   * line, or null. */
  retry(id, nowMs) {
    const c = this.sent.get(id);
    if (!c || !retriable(c)) return null;
    c.state = 'sent';
    c.reason = null;
    c.detail = null;
    c.sentAt = nowMs;
    c.tries += 1;
    return c.line;
  }
}

/** The relay's refusals that say the command could not go where it was
 * going now (AEP-0004 §4.2), and the page's own `not-connected`: the
 * same bytes may get through later. */
const TRANSIENT = new Set(['no-route', 'ambiguous', 'busy', 'limit-exceeded', 'not-connected']);

/**
 * Whether a command may be sent again as it is: one that timed out, or
 * that the relay refused for where it was going (`TRANSIENT`). Not one
 * refused for what it says (`invalid-event`, `bad-frame`, ...), nor for
 * who sent it or what the target takes (`unauthorized`, `unsupported`),
 * nor for a code the page does not know: the same bytes would be refused
 * again, so the page offers the answer controls instead.
 */
export function retriable(record) {
  if (record.state === 'timeout') return true;
  return record.state === 'refused' && TRANSIENT.has(record.reason);
}

/**
 * Whether an answer can be sent from this page, and why not, in plain
 * words (`ref` names the rule, for a tooltip): the request must be
 * pending in a session that has not ended, take answers through the relay
 * (its `respond_via` includes `control`), the relay must route commands
 * (`routed`, from its discovery document: false when it was started
 * without a token; null while unknown), the page must hold a token and a
 * ready socket, and the relay's roster must show exactly one live owner
 * of the session that accepts `control.attention.respond`.
 */
export function reachability(request, { token, socketReady, roster, routed = null }) {
  const data = request.event.data && typeof request.event.data === 'object' ? request.event.data : {};
  const via = Array.isArray(data.respond_via) ? data.respond_via : [];
  if (request.state !== 'pending') return { ok: false, why: null, ref: null };
  if (request.sessionEnded !== undefined && request.sessionEnded !== null) {
    return { ok: false, why: 'Closed without an answer: the agent’s session ended while this was waiting, so nobody can answer it now.', ref: 'AEP-0002: session.ended' };
  }
  if (!via.includes('control')) {
    return { ok: false, why: 'This request can only be answered in the agent’s own window, not from this page.', ref: via.length ? `AEP-0006: respond_via is ${via.join(', ')}` : 'AEP-0006: no respond_via' };
  }
  if (routed === false) {
    return { ok: false, why: 'Answering is off: this relay was started without a token, so it passes no answers on to agents. Restart it with a token (AEP_TOKEN) to answer from here.', ref: 'AEP-0004 §4.1' };
  }
  if (!token) {
    return { ok: false, why: 'Answering is off: this page has no token. Add the relay’s token to answer from here.', ref: 'AEP-0004 §4.1' };
  }
  if (!socketReady) return { ok: false, why: 'Not connected to the relay yet; the answer controls show once it is.', ref: null };
  const owners = (roster || []).filter((e) => e && e.session === request.session);
  if (owners.length === 0) {
    return { ok: false, why: `Not answerable from here: no live owner. The agent that owns session ${request.session} is not connected to this relay.`, ref: 'AEP-0003 §4.1: roster' };
  }
  if (owners.length > 1) {
    return { ok: false, why: `Not answerable from here: ${owners.length} connections claim session ${request.session}, and the relay sends an answer to at most one.`, ref: 'AEP-0004 §4' };
  }
  const accepts = owners[0].control && Array.isArray(owners[0].control.accepts) ? owners[0].control.accepts : [];
  if (!accepts.includes('control.attention.respond')) {
    return { ok: false, why: 'Not answerable from here: the agent that owns this session does not take answers from the relay.', ref: 'its hello does not accept control.attention.respond' };
  }
  return { ok: true, why: null, ref: null };
}

/** The ack window the session's owner declared in its `hello`
 * (`control.ack_window_ms`, AEP-0004 §3), or null. */
export function ackWindow(session, roster) {
  const owner = (roster || []).find((e) => e && e.session === session);
  const ms = owner && owner.control ? owner.control.ack_window_ms : undefined;
  return Number.isInteger(ms) && ms > 0 && ms <= 600_000 ? ms : null;
}
