// The session timeline's reading aids, pure (no DOM): tool calls folded
// into one row each, runs as groups, and the filters a person applies
// (type family, lowest severity, text). The view (views/session.js)
// draws what these say.

const SEVERITIES = ['debug', 'info', 'notice', 'warning', 'error', 'critical'];

/** The lowest severities a person can filter by, lowest first. */
export const SEVERITY_LEVELS = SEVERITIES;

function text(value) {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** An event's severity (`info` when it declares none or an unknown one). */
export function severity(event) {
  return SEVERITIES.includes(event?.severity) ? event.severity : 'info';
}

/** An event's type family: what comes before the first dot (`tool`,
 * `run`, `attention`, ...), or `x` for extension types. */
export function family(event) {
  const type = typeof event?.type === 'string' ? event.type : '';
  if (type.startsWith('x.')) return 'x';
  const dot = type.indexOf('.');
  return dot > 0 ? type.slice(0, dot) : type || 'unknown';
}

const TOOL_PHASES = {
  'tool.requested': 'requested',
  'tool.completed': 'completed',
  'tool.failed': 'failed',
  'tool.denied': 'denied',
};

/** The tool call an event belongs to: its key (the run and the call id,
 * so the same call id in two runs is two calls), the tool's name and the
 * phase; null for events that are not a tool call's or name no call id
 * (those stay rows of their own). */
export function toolCall(event) {
  const phase = TOOL_PHASES[event?.type];
  if (!phase) return null;
  const tool = event.data && typeof event.data === 'object' ? event.data.tool : null;
  const callId = text(tool?.call_id);
  if (!callId) return null;
  return {
    key: JSON.stringify([text(event.run) ?? '', callId]),
    callId,
    name: text(tool?.name) ?? 'a tool',
    phase,
  };
}

function millis(time) {
  const t = Date.parse(time);
  return Number.isFinite(t) ? t : null;
}

/** The tool calls of one session, folded from their events in any order:
 * a completion may come before its request, a request may never end. */
export class Calls {
  constructor() {
    this.byKey = new Map();
  }

  /** Folds `event` in; returns its call (or null when it is not a call's). */
  add(event) {
    const ref = toolCall(event);
    if (!ref) return null;
    let call = this.byKey.get(ref.key);
    if (!call) {
      call = {
        key: ref.key,
        callId: ref.callId,
        name: ref.name,
        run: text(event.run),
        status: 'running',
        started: null,
        ended: null,
        reportedMs: null,
        events: [],
      };
      this.byKey.set(ref.key, call);
    }
    if (!call.events.includes(event.id)) call.events.push(event.id);
    if (ref.phase === 'requested') {
      call.started = call.started ?? millis(event.time);
      call.name = ref.name;
    } else if (call.status === 'running') {
      // The first terminal decides; a second one changes nothing here
      // (the fold reports it as the protocol's business, not the page's).
      call.status = ref.phase;
      call.ended = millis(event.time);
      const reported = event.data?.duration_ms;
      if (typeof reported === 'number' && Number.isFinite(reported) && reported >= 0) call.reportedMs = reported;
    }
    return call;
  }

  get(key) {
    return this.byKey.get(key) ?? null;
  }
}

/** How long a call or a run took, in ms: what the agent reported, else
 * end minus start; null when neither can be known. */
export function durationMs(item) {
  if (typeof item.reportedMs === 'number') return item.reportedMs;
  if (item.started !== null && item.ended !== null && item.ended >= item.started) return item.ended - item.started;
  return null;
}

/** A duration in words a person reads at a glance. */
export function formatDuration(ms) {
  if (ms === null || ms === undefined) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

/** The words for a call's status. */
export function callStatus(call) {
  return { running: 'running', completed: 'completed', failed: 'failed', denied: 'denied' }[call.status] ?? call.status;
}

/** A filter: `families` (a Set, or null for all), `lowest` severity
 * (null for all) and `text` (case-insensitive, over the type, the
 * summary and the payload the event carries at its capture level). */
export function matches(event, filter, summary = '') {
  if (filter.families && !filter.families.has(family(event))) return false;
  if (filter.lowest && SEVERITIES.indexOf(severity(event)) < SEVERITIES.indexOf(filter.lowest)) return false;
  const needle = typeof filter.text === 'string' ? filter.text.trim().toLowerCase() : '';
  if (needle) {
    let payload = '';
    try {
      payload = event.data === undefined ? '' : JSON.stringify(event.data);
    } catch {
      payload = '';
    }
    const haystack = `${event.type ?? ''}\n${summary}\n${payload}`.toLowerCase();
    if (!haystack.includes(needle)) return false;
  }
  return true;
}

/** A filter that lets everything through. */
export function everything() {
  return { families: null, lowest: null, text: '' };
}

/** Whether a filter narrows anything. */
export function narrows(filter) {
  return Boolean(filter.families) || Boolean(filter.lowest) || Boolean(filter.text && filter.text.trim());
}
