// The fleet view: the inbox of pending requests across sessions (newest
// first), every session with its state, runs, last activity and pending
// count, the projection's violations, and what the relay said about
// gaps. Live: `update` is called as events arrive.

import { h, reconcile, replace } from '../dom.js';
import { Fleet } from '../projection.js';
import { ago } from '../summary.js';
import { emptyText } from '../status.js';

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
    this.inbox = h('div', { class: 'inbox-list' });
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
    const sessions = [...fleet.sessions.values()].reverse();
    this.noSessions.hidden = sessions.length > 0;
    this.noSessions.textContent = emptyText(this.app.link, 'sessions');
    reconcile(this.rows, sessions.map((s) => this.row(s, now)));

    const v = fleet.violations;
    this.violationsTitle.textContent = `Protocol violations (${v.length})`;
    const items = v.map((x) => h('li', { 'data-rule': x.rule, text: violationText(x) }));
    if (fleet.unreadable) items.push(h('li', { 'data-rule': 'unreadable', text: `${fleet.unreadable} delivered line(s) were not readable as events and were skipped.` }));
    if (!items.length) items.push(h('li', { class: 'empty', text: 'None seen.' }));
    replace(this.violations, items);
    replace(this.notices, this.app.notices.map((n) => h('li', { text: n })));
  }
}
