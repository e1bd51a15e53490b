// The fleet view: the inbox of pending requests across sessions (newest
// first), the sessions with their state, runs, last activity and pending
// count (filtered by agent, state and text, ended ones folded away unless
// asked for, in the order the person picks), the projection's violations,
// and what the relay said about gaps. Live: `update` is called as events
// arrive.

import { h, reconcile, replace } from '../dom.js';
import { Fleet } from '../projection.js';
import { ago } from '../summary.js';
import { emptyText } from '../status.js';
import { measure } from '../perf.js';
import { ORDERS, arrange, defaults } from '../sessions.js';

const RECENT_MS = 60_000;
const STATE_TEXT = { running: 'running', waiting: 'waiting on a person', ended: 'ended' };

export function runsText(s) {
  const runs = [...s.runs.values()];
  if (!runs.length) return 'none';
  const open = runs.filter((r) => r.status === 'running').map((r) => r.run);
  const counts = {};
  for (const r of runs) counts[r.status] = (counts[r.status] || 0) + 1;
  const tally = Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(', ');
  return open.length ? `${tally} (now: ${open.join(', ')})` : tally;
}

export function violationText(v) {
  const where = v.session !== undefined ? `session ${v.session} (${v.source})` : `source ${v.source}`;
  const what = v.run !== undefined ? `run ${v.run}` : v.id !== undefined ? `event ${v.id}` : v.pending !== undefined ? `${v.pending} pending` : '';
  return [v.rule, where, what].filter(Boolean).join(' — ');
}

export class FleetView {
  constructor(app) {
    this.app = app;
    this.inboxCount = h('span', { class: 'count' });
    // The inbox from the keyboard: ArrowDown/ArrowUp (or j/k) move between
    // requests, Home/End to the first and last; keys typed into a field
    // stay the field's.
    this.inbox = h('div', { class: 'inbox-list', 'aria-label': 'Requests waiting on a person (arrow keys move between them)', on: { keydown: (e) => this.onInboxKey(e) } });
    this.inboxEmpty = h('p', { class: 'empty', text: emptyText(app.link, 'inbox') });
    // Requests still pending when their session ended: nobody can answer
    // them, so they leave the inbox for this folded list.
    this.closedCount = h('span', { class: 'count' });
    this.closed = h('div', { class: 'inbox-list' });
    this.closedBox = h(
      'details',
      { id: 'closed', class: 'closed-box', hidden: true },
      h('summary', {}, 'Closed without an answer ', this.closedCount),
      h('p', { class: 'hint', text: 'These were still waiting when their session ended. Nobody can answer them now; they are kept here so they can be found.' }),
      this.closed,
    );
    this.rows = h('tbody');
    this.rowCache = new Map();
    // What the table shows: chosen by the person, kept across updates.
    this.filter = defaults();
    const changed = () => this.refilter();
    this.agentPick = h('select', { id: 'fleet-agent', 'aria-label': 'Show the sessions of agent', on: { change: changed } });
    this.statePick = h(
      'select',
      { id: 'fleet-state', 'aria-label': 'Show the sessions in state', on: { change: changed } },
      h('option', { value: '', text: 'Any state' }),
      Object.entries(STATE_TEXT).map(([value, text]) => h('option', { value, text })),
    );
    this.orderPick = h(
      'select',
      { id: 'fleet-order', 'aria-label': 'Order the sessions by', on: { change: changed } },
      Object.entries(ORDERS).map(([value, text]) => h('option', { value, text })),
    );
    this.find = h('input', { id: 'fleet-search', type: 'search', placeholder: 'Find a session', 'aria-label': 'Find a session', on: { input: changed } });
    this.endedBox = h('input', { id: 'fleet-ended', type: 'checkbox', on: { change: changed } });
    this.endedLabel = h('span', { class: 'ended-count' });
    this.agentsSeen = '';
    this.noSessions = h('p', { class: 'empty', text: emptyText(app.link, 'sessions') });
    this.violationsTitle = h('h2', { id: 'violations-title' });
    this.violations = h('ul', { class: 'violations' });
    this.notices = h('ul', { class: 'notices' });
    this.el = h(
      'div',
      { class: 'fleet-view' },
      h('section', { id: 'inbox', 'aria-labelledby': 'inbox-title' }, h('h2', { id: 'inbox-title' }, 'Waiting on a person ', this.inboxCount), this.inboxEmpty, this.inbox, this.closedBox),
      h(
        'section',
        { id: 'fleet', 'aria-labelledby': 'fleet-title' },
        h('h2', { id: 'fleet-title', text: 'Sessions' }),
        h(
          'div',
          { class: 'fleet-tools' },
          this.agentPick,
          this.statePick,
          this.find,
          this.orderPick,
          h('label', { class: 'show-ended' }, this.endedBox, ' ', this.endedLabel),
        ),
        this.noSessions,
        h(
          'table',
          { class: 'fleet' },
          h('thead', {}, h('tr', {}, ['Session', 'Agent', 'State', 'Runs', 'Last activity', 'Pending'].map((t) => h('th', { scope: 'col', text: t })))),
          this.rows,
        ),
      ),
      h('section', { id: 'violations', 'aria-labelledby': 'violations-title' }, this.violationsTitle, this.violations),
      h('section', { id: 'notices', 'aria-label': 'What the relay said' }, this.notices),
    );
  }

  /** The session's row, kept across updates (a focused link stays). */
  row(s, now) {
    let row = this.rowCache.get(s.key);
    if (!row) {
      const cell = (cls) => h('td', { class: cls });
      row = { state: h('span', { class: 'badge' }), agent: cell('agent'), runs: cell('runs'), last: cell('last'), pending: cell('pending') };
      row.tr = h(
        'tr',
        { 'data-session': s.session },
        h('th', { scope: 'row' }, h('a', { href: this.app.sessionHref(s.key), text: s.session }), h('div', { class: 'source', text: s.source })),
        row.agent,
        h('td', { class: 'state' }, row.state),
        row.runs,
        row.last,
        row.pending,
      );
      this.rowCache.set(s.key, row);
    }
    const state = Fleet.state(s);
    row.tr.dataset.state = state;
    row.tr.className = `state-${state}`;
    row.state.className = `badge badge-${state}`;
    row.state.textContent = STATE_TEXT[state];
    row.agent.textContent = s.agent;
    row.runs.textContent = runsText(s);
    row.last.textContent = s.last === null ? '—' : `${ago(s.last, now)} ago`;
    row.pending.textContent = String(s.pending.length);
    return row.tr;
  }

  onInboxKey(e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.target.closest('input, textarea, select')) return;
    const step = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1, Home: -Infinity, End: Infinity }[e.key];
    if (step === undefined) return;
    const cards = [...this.inbox.querySelectorAll(':scope > article.request')];
    if (!cards.length) return;
    const at = cards.findIndex((c) => c.contains(document.activeElement));
    let next;
    if (step === -Infinity) next = 0;
    else if (step === Infinity) next = cards.length - 1;
    else next = at < 0 ? 0 : Math.min(cards.length - 1, Math.max(0, at + step));
    e.preventDefault();
    cards[next].focus();
  }

  refilter() {
    this.filter = {
      agent: this.agentPick.value,
      state: this.statePick.value,
      text: this.find.value,
      showEnded: this.endedBox.checked,
      order: this.orderPick.value,
    };
    this.update();
  }

  update() {
    const { fleet } = this.app;
    const now = this.app.now();
    const pending = fleet.inbox();
    this.inboxCount.textContent = `(${pending.length})`;
    // A request answered from this page stays a minute after it closes,
    // so the person sees what became of the answer.
    const recent = [...this.app.cards.values()]
      .filter((c) => c.commands.length && c.request.state !== 'pending' && c.closedSeen !== undefined && now - c.closedSeen < RECENT_MS)
      .map((c) => c.request);
    const shown = [...pending, ...recent].sort((a, b) => (Date.parse(b.since) || 0) - (Date.parse(a.since) || 0));
    this.inboxEmpty.hidden = shown.length > 0;
    this.inboxEmpty.textContent = emptyText(this.app.link, 'inbox');
    reconcile(this.inbox, shown.map((r) => this.app.cardFor(r).el));
    const closed = fleet.closedUnanswered();
    this.closedBox.hidden = closed.length === 0;
    this.closedCount.textContent = `(${closed.length})`;
    reconcile(this.closed, closed.map((r) => this.app.cardFor(r).el));

    // Newest first, in the order the sessions appeared: a row never moves
    // under a pointer while its session and its neighbours keep working
    // (ordering by last activity swapped busy rows between a look and a
    // click).
    const all = [...fleet.sessions.values()];
    const agents = [...new Set(all.map((s) => s.agent).filter((a) => typeof a === 'string' && a !== ''))].sort();
    if (agents.join('\n') !== this.agentsSeen) {
      this.agentsSeen = agents.join('\n');
      replace(this.agentPick, h('option', { value: '', text: 'Any agent' }), agents.map((a) => h('option', { value: a, text: a })));
      this.agentPick.value = this.filter.agent;
    }
    const { rows, endedHidden } = arrange(all, this.filter, (s) => Fleet.state(s));
    this.noSessions.hidden = all.length > 0;
    this.noSessions.textContent = emptyText(this.app.link, 'sessions');
    const ended = all.filter((s) => Fleet.state(s) === 'ended').length;
    this.endedLabel.textContent = `Show ended sessions (${ended})`;
    this.endedBox.disabled = ended === 0 && !this.filter.showEnded;
    this.rows.dataset.endedHidden = String(endedHidden);
    reconcile(this.rows, rows.map((s) => this.row(s, now)));
    if (rows.length !== this.rowsDrawn) {
      // When the table first showed each count of rows, since the page
      // opened (the figures test reads when the whole fleet was drawn).
      this.rowsDrawn = rows.length;
      measure('aep:fleet-rows', 0, { rows: rows.length });
    }

    const v = fleet.violations;
    this.violationsTitle.textContent = `Protocol violations (${v.length})`;
    const items = v.map((x) => h('li', { 'data-rule': x.rule, text: violationText(x) }));
    if (fleet.unreadable) items.push(h('li', { 'data-rule': 'unreadable', text: `${fleet.unreadable} delivered line(s) were not readable as events and were skipped.` }));
    if (!items.length) items.push(h('li', { class: 'empty', text: 'None seen.' }));
    replace(this.violations, items);
    replace(this.notices, this.app.notices.map((n) => h('li', { text: n })));
  }
}
