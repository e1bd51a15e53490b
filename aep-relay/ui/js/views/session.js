// One session: who and where, its state and runs, its requests (pending
// ones answerable), and the timeline of its events (commands addressed to
// it included) with time, type, severity, a one-line summary and `cause`
// links that move to the event they name.

import { h, reconcile, replace } from '../dom.js';
import { Fleet } from '../projection.js';
import { ago, severityOf, summarize } from '../summary.js';

function clock(time) {
  const t = Date.parse(time);
  if (!Number.isFinite(t)) return String(time ?? '');
  const d = new Date(t);
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export class SessionView {
  constructor(app, key) {
    this.app = app;
    this.key = key;
    this.rendered = 0;
    this.rowsById = new Map();
    this.expanded = new Set();
    this.title = h('h2', { id: 'session-title', tabindex: '-1' });
    this.facts = h('dl', { class: 'facts' });
    this.runs = h('tbody');
    this.requests = h('div', { class: 'requests' });
    this.noRequests = h('p', { class: 'empty', text: 'No attention requests in this session.' });
    this.dropped = h('p', { class: 'note', hidden: true });
    this.timeline = h('tbody');
    this.el = h(
      'div',
      { class: 'session-view' },
      h('p', {}, h('a', { href: '#/', text: '← All sessions' })),
      this.title,
      this.facts,
      h('section', { 'aria-labelledby': 'requests-title' }, h('h3', { id: 'requests-title', text: 'Requests' }), this.noRequests, this.requests),
      h(
        'section',
        { 'aria-labelledby': 'runs-title' },
        h('h3', { id: 'runs-title', text: 'Runs' }),
        h('table', { class: 'runs' }, h('thead', {}, h('tr', {}, ['Run', 'Status', 'Started', 'Ended'].map((t) => h('th', { scope: 'col', text: t })))), this.runs),
      ),
      h(
        'section',
        { 'aria-labelledby': 'timeline-title' },
        h('h3', { id: 'timeline-title', text: 'Timeline' }),
        this.dropped,
        h(
          'table',
          { class: 'timeline' },
          h('thead', {}, h('tr', {}, ['Time', 'Type', 'Severity', 'Summary', 'Cause'].map((t) => h('th', { scope: 'col', text: t })))),
          this.timeline,
        ),
      ),
    );
  }

  session() {
    return this.app.fleet.sessions.get(this.key) || null;
  }

  update() {
    const s = this.session();
    if (!s) {
      this.title.textContent = 'Session not seen (yet)';
      replace(this.facts, h('dd', { text: 'Its events may still arrive, or the relay no longer holds it.' }));
      return;
    }
    const state = Fleet.state(s);
    this.title.textContent = `Session ${s.session}`;
    const now = this.app.now();
    const fact = (name, value) => [h('dt', { text: name }), h('dd', { class: `fact-${name.toLowerCase().replace(/\s+/g, '-')}`, text: value })];
    replace(
      this.facts,
      fact('Source', s.source),
      fact('Agent', s.agent),
      s.label ? fact('Label', s.label) : null,
      fact('State', { running: 'running', waiting: 'waiting on a person', ended: 'ended' }[state]),
      fact('Position', s.position ? `epoch ${s.position.epoch}, seq ${s.position.seq}` : '—'),
      fact('Last activity', s.last === null ? '—' : `${ago(s.last, now)} ago`),
    );
    replace(
      this.runs,
      [...s.runs.values()].map((r) => h('tr', { 'data-run': r.run }, h('th', { scope: 'row', text: r.run }), h('td', { text: r.status }), h('td', { text: r.started ?? '—' }), h('td', { text: r.ended ?? '—' }))),
    );

    const requests = s.requests.map((k) => this.app.fleet.requests.get(k)).filter(Boolean);
    requests.sort((a, b) => (a.state === 'pending') - (b.state === 'pending') || (Date.parse(a.since) || 0) - (Date.parse(b.since) || 0));
    requests.reverse();
    this.noRequests.hidden = requests.length > 0;
    reconcile(this.requests, requests.map((r) => {
      const card = this.app.cardFor(r);
      if (!this.expanded.has(r.key)) {
        this.expanded.add(r.key);
        if (r.state === 'pending') card.expand();
      }
      return card.el;
    }));

    this.timelineRows(s);
  }

  timelineRows(s) {
    // Rows are appended as the timeline grows; when old events were
    // dropped from memory, the table is rebuilt.
    const shown = s.dropped + s.timeline.length;
    if (this.droppedSeen !== s.dropped) {
      this.droppedSeen = s.dropped;
      this.rendered = s.dropped;
      this.rowsById.clear();
      replace(this.timeline);
    }
    for (let i = this.rendered - s.dropped; i < s.timeline.length; i += 1) this.timeline.append(this.row(s.timeline[i]));
    this.rendered = shown;
    this.dropped.hidden = s.dropped === 0;
    this.dropped.textContent = `${s.dropped} earlier events are not kept in this page.`;
  }

  row(event) {
    const severity = severityOf(event);
    let cause = '';
    if (typeof event.cause === 'string') {
      cause = h('a', {
        href: `#${this.app.route}`,
        class: 'cause',
        'data-cause': event.cause,
        text: event.cause,
        on: {
          click: (e) => {
            e.preventDefault();
            this.follow(event.cause);
          },
        },
      });
    }
    const tr = h(
      'tr',
      { class: `sev-${severity}`, 'data-event': event.id, 'data-type': event.type, tabindex: '-1' },
      h('td', {}, h('time', { datetime: String(event.time ?? ''), text: clock(event.time) })),
      h('td', {}, h('code', { text: event.type })),
      h('td', {}, h('span', { class: `sev sev-${severity}`, text: severity })),
      h('td', { class: 'summary', text: summarize(event) }),
      h('td', {}, cause),
    );
    if (!this.rowsById.has(event.id)) this.rowsById.set(event.id, tr);
    return tr;
  }

  /** Moves to the event `id` names, when this timeline holds it. */
  follow(id) {
    const target = this.rowsById.get(id);
    for (const old of this.timeline.querySelectorAll('.followed')) old.classList.remove('followed');
    if (!target) {
      this.app.announce(`Event ${id} is not in this session's timeline.`);
      return;
    }
    target.classList.add('followed');
    target.scrollIntoView({ block: 'center' });
    target.focus();
  }
}
