// One line of text for an event's payload, and what its capture level
// means for what the page shows. Pure: strings in, strings out; the
// caller puts them in text nodes.

const MAX = 160;

function clip(s) {
  const t = String(s).replace(/\s+/g, ' ').trim();
  return t.length > MAX ? `${t.slice(0, MAX - 1)}…` : t;
}

function str(v) {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v);
}

/** The capture level an event declares (default `metadata`). */
export function captureOf(event) {
  return ['none', 'metadata', 'redacted', 'full'].includes(event.capture) ? event.capture : 'metadata';
}

/** What the page must say about an event's text at its capture level,
 * in plain words; null when its text can be shown as the agent's own. */
export function captureNote(event) {
  switch (captureOf(event)) {
    case 'none':
      return 'The agent sent no text with this: what shows here is a placeholder.';
    case 'metadata':
      return 'The agent sent no text with this: the question and its labels are placeholders, not the agent’s words.';
    case 'redacted':
      return 'Text was redacted by the agent before it was sent.';
    default:
      return null;
  }
}

/** The spec's words for an event's capture level, for a tooltip. */
export function captureRef(event) {
  return `capture: ${captureOf(event)} (AEP-0006)`;
}

/** A form answer's values, one short phrase. */
export function valuesText(values) {
  if (!values || typeof values !== 'object') return '';
  return Object.entries(values)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.map(str).join('+') : str(v)}`)
    .join(', ');
}

/** An answer object (`option`, `text`, `values`), one short phrase. */
export function answerText(answer) {
  if (!answer || typeof answer !== 'object') return '';
  const parts = [];
  if (answer.option !== undefined) parts.push(`option ${str(answer.option)}`);
  if (answer.text !== undefined) parts.push(`“${str(answer.text)}”`);
  if (answer.values !== undefined) parts.push(valuesText(answer.values));
  return parts.join('; ');
}

function tool(d) {
  return d.tool && typeof d.tool === 'object' ? str(d.tool.name) : '';
}

/** One line summing up an event's payload. */
export function summarize(event) {
  const d = event.data && typeof event.data === 'object' && !Array.isArray(event.data) ? event.data : {};
  const parts = (...xs) => clip(xs.filter((x) => x !== '' && x !== null && x !== undefined).join(' · '));
  switch (event.type) {
    case 'session.started':
      return parts(str(d.label), d.client ? `${str(d.client.name)} ${str(d.client.version)}`.trim() : '');
    case 'session.ended':
      return parts(str(d.reason) || 'ended');
    case 'run.started':
      return parts(str(d.prompt), d.trigger ? `trigger ${str(d.trigger)}` : '');
    case 'run.finished':
    case 'run.failed':
    case 'run.cancelled':
      return parts(event.run ? `run ${event.run}` : '', str(d.reason), d.by ? `by ${str(d.by)}` : '', d.error ? str(d.error.message) : '');
    case 'tool.requested':
      return parts(tool(d), d.args ? clip(Object.values(d.args).map(str).join(' ')) : '');
    case 'tool.completed':
    case 'tool.failed':
    case 'tool.denied':
      return parts(tool(d), str(d.status), d.duration_ms !== undefined ? `${str(d.duration_ms)} ms` : '', str(d.reason));
    case 'progress.status':
      return parts(str(d.message), str(d.phase), d.percent !== undefined ? `${str(d.percent)}%` : '');
    case 'attention.requested':
      return parts(str(d.kind), str(d.prompt));
    case 'attention.answered':
      return parts(answerText(d.answer));
    case 'attention.resolved':
      return parts(str(d.resolution));
    case 'control.attention.respond':
      return parts(answerText(d.answer));
    case 'control.accepted':
      return 'accepted';
    case 'control.rejected':
      return parts(str(d.reason), str(d.detail));
    case 'control.cancel':
      return parts(str(d.scope), str(d.reason));
    case 'error.raised':
      return parts(str(d.code), str(d.message));
    default: {
      const json = JSON.stringify(d);
      return json === '{}' ? '' : clip(json);
    }
  }
}

const SEVERITIES = ['debug', 'info', 'notice', 'warning', 'error', 'critical'];

/** The severity an event declares (default `info`). */
export function severityOf(event) {
  return SEVERITIES.includes(event.severity) ? event.severity : 'info';
}

/** "12 s", "3 min", "2 h 5 min": how long since `since` (ms), at `now`. */
export function ago(since, now) {
  if (!Number.isFinite(since)) return '—';
  const s = Math.max(0, Math.floor((now - since) / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d`;
}

/** An id short enough to read at a glance: a long one (a ULID is 26
 * characters) keeps its first and last four, which tell ids apart in one
 * session; the whole id stays in a tooltip and is copied on click. */
export function shortId(id) {
  const s = typeof id === 'string' ? id : String(id ?? '');
  return s.length <= 12 ? s : `${s.slice(0, 4)}…${s.slice(-4)}`;
}
