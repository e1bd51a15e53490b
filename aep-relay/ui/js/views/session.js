// One session: who and where, its state and runs, its requests (pending
// ones answerable), and the timeline of its events (commands addressed to
// it included) with time, type, severity, a one-line summary and `cause`
// links that move to the event they name. The timeline reads as a person
// reads it: each run a group that folds, each tool call one row (its
// events open under it), filters by type and severity, a search, and a
// view that follows the latest event until the person scrolls up.

import { h, reconcile, replace } from '../dom.js';
import { Fleet } from '../projection.js';
import { ago, severityOf, shortId, summarize } from '../summary.js';
import { FRAME_BUDGET_MS, within } from '../pace.js';
import { Calls, SEVERITY_LEVELS, callStatus, durationMs, everything, family, formatDuration, matches, narrows } from '../timeline.js';

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
    // Rows are laid out one by one, not as a table's (see style.css), so
    // the table's roles are said outright.
    this.timeline = h('tbody', { role: 'rowgroup' });
    this.events = new Map();
    this.order = [];
    this.prompts = new Map();
    this.calls = new Calls();
    this.callRows = new Map();
    this.openCalls = new Set();
    this.runHeads = new Map();
    this.foldedRuns = new Set();
    this.filter = everything();
    this.following = true;
    this.families = new Set();
    this.familyPick = h('select', { id: 'timeline-family', 'aria-label': 'Show events of type', on: { change: () => this.refilter() } }, h('option', { value: '', text: 'All types' }));
    this.severityPick = h(
      'select',
      { id: 'timeline-severity', 'aria-label': 'Lowest severity shown', on: { change: () => this.refilter() } },
      h('option', { value: '', text: 'Any severity' }),
      SEVERITY_LEVELS.slice(1).map((level) => h('option', { value: level, text: `${level} and above` })),
    );
    this.search = h('input', { id: 'timeline-search', type: 'search', placeholder: 'Search this timeline', 'aria-label': 'Search this timeline', on: { input: () => this.refilter() } });
    this.followBox = h('input', { id: 'timeline-follow', type: 'checkbox', checked: true, on: { change: () => this.setFollowing(this.followBox.checked) } });
    this.jump = h('button', { id: 'timeline-jump', type: 'button', hidden: true, text: 'Jump to latest', on: { click: () => this.setFollowing(true) } });
    this.shownNote = h('p', { class: 'note', id: 'timeline-shown', hidden: true });
    // The timeline scrolls in its own box, so following the latest event
    // never moves the page (a form being answered above stays put).
    // While the pointer is over it the box holds still (a row being
    // clicked does not move away); it catches up when the pointer leaves.
    this.box = h('div', {
      class: 'timeline-box',
      on: {
        scroll: () => this.onScroll(),
        pointerenter: () => {
          this.pointerInside = true;
        },
        pointerleave: () => {
          this.pointerInside = false;
          if (this.following) this.toLatest();
        },
      },
    });
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
        h(
          'div',
          { class: 'timeline-tools' },
          this.familyPick,
          this.severityPick,
          this.search,
          h('label', { class: 'follow' }, this.followBox, ' Follow latest'),
          this.jump,
        ),
        this.dropped,
        this.shownNote,
        (this.box.append(
          h(
            'table',
            { class: 'timeline', role: 'table', 'aria-labelledby': 'timeline-title' },
            h('thead', { role: 'rowgroup' }, h('tr', { role: 'row' }, ['Time', 'Type', 'Severity', 'Summary', 'Cause'].map((t) => h('th', { scope: 'col', role: 'columnheader', text: t })))),
            this.timeline,
          ),
        ),
        this.box),
      ),
    );
  }

  session() {
    return this.app.fleet.sessions.get(this.key) || null;
  }

  /** Draws what the fold holds now. Returns true when timeline rows are
   * left to place (the frame's budget ran out): the caller draws again
   * in the next frame. */
  update() {
    const s = this.session();
    if (!s) {
      this.title.textContent = 'Session not seen (yet)';
      replace(this.facts, h('dd', { text: 'Its events may still arrive, or the relay no longer holds it.' }));
      return false;
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

    return this.timelineRows(s);
  }

  timelineRows(s) {
    // Rows are appended as the timeline grows, and the rows of events the
    // fold no longer keeps are removed from the top: a long session costs
    // the page the same as one of the fold's length. New rows are placed
    // in the fold's order for at most a frame's budget; the rest wait for
    // the next frame (`rendered` counts the events placed or let go, so
    // none is placed twice or skipped, and an event the fold lets go
    // before its turn is never placed).
    const end = s.dropped + s.timeline.length;
    if (this.droppedSeen === undefined) {
      this.droppedSeen = s.dropped;
      this.rendered = s.dropped;
    } else if (s.dropped > this.droppedSeen) {
      let gone = s.dropped - this.droppedSeen;
      this.droppedSeen = s.dropped;
      while (gone > 0 && this.order.length) {
        this.forget(this.order.shift());
        gone -= 1;
      }
      this.rendered = Math.max(this.rendered, s.dropped);
    }
    const added = this.rendered < end;
    const left =
      added &&
      within(FRAME_BUDGET_MS, () => performance.now(), () => {
        this.place(s, s.timeline[this.rendered - s.dropped]);
        this.rendered += 1;
        return this.rendered < end;
      });
    this.dropped.hidden = s.dropped === 0;
    this.dropped.textContent = `${s.dropped} earlier events are not kept in this page.`;
    for (const [run, head] of this.runHeads) this.drawRunHead(head, s.runs.get(run), run);
    if (added) {
      this.countShown();
      if (this.following) this.toLatest();
    }
    return left;
  }

  /** Removes the row of an event the fold no longer keeps (and its call's
   * row with the call's last event). */
  forget(id) {
    const tr = this.rowsById.get(id);
    this.rowsById.delete(id);
    this.events.delete(id);
    if (!tr) return;
    tr.remove();
    const key = tr.dataset.call;
    const call = key ? this.calls.get(key) : null;
    if (call) {
      call.events = call.events.filter((e) => e !== id);
      const row = this.callRows.get(key);
      if (!call.events.length) {
        if (row) row.remove();
        this.callRows.delete(key);
        this.calls.byKey.delete(key);
        this.openCalls.delete(key);
      } else if (row) this.drawCall(row, call);
    }
  }

  /** Puts one event's row in the table, under its run's group, folded
   * into its tool call's row when it is a call's. */
  place(s, event) {
    this.events.set(event.id, event);
    this.order.push(event.id);
    if (event.type === 'run.started' && typeof event.run === 'string' && !this.prompts.has(event.run)) {
      const prompt = event.data?.prompt;
      if (typeof prompt === 'string' && prompt.trim()) this.prompts.set(event.run, prompt.length > 120 ? `${prompt.slice(0, 119)}…` : prompt);
    }
    const fam = family(event);
    if (!this.families.has(fam)) {
      this.families.add(fam);
      const options = [...this.families].sort();
      const picked = this.familyPick.value;
      replace(this.familyPick, h('option', { value: '', text: 'All types' }), options.map((f) => h('option', { value: f, text: f })));
      this.familyPick.value = picked;
    }
    const run = typeof event.run === 'string' && event.run !== '' ? event.run : null;
    if (run !== null && !this.runHeads.has(run)) {
      const head = h('tr', { class: 'run-head', 'data-run-head': run, tabindex: '0', role: 'button', 'aria-expanded': 'true', on: { click: () => this.toggleRun(run), keydown: (e) => this.activate(e, () => this.toggleRun(run)) } });
      this.runHeads.set(run, head);
      this.drawRunHead(head, s.runs.get(run), run);
      this.timeline.append(head);
    }
    const tr = this.row(event);
    tr.dataset.family = fam;
    if (run !== null) tr.dataset.run = run;
    const call = this.calls.add(event);
    if (call) {
      tr.dataset.call = call.key;
      tr.classList.add('in-call');
      let callRow = this.callRows.get(call.key);
      if (!callRow) {
        callRow = h('tr', { class: 'call', 'data-call': call.key, tabindex: '0', role: 'button', 'aria-expanded': 'false', on: { click: () => this.toggleCall(call.key), keydown: (e) => this.activate(e, () => this.toggleCall(call.key)) } });
        if (run !== null) callRow.dataset.run = run;
        this.callRows.set(call.key, callRow);
        this.timeline.append(callRow);
      }
      this.drawCall(callRow, call);
    }
    this.timeline.append(tr);
    this.show(tr);
    if (call) this.show(this.callRows.get(call.key));
  }

  activate(e, act) {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      act();
    }
  }

  drawRunHead(head, run, id) {
    const status = run?.status ?? 'running';
    const started = Date.parse(run?.started ?? '');
    const ended = Date.parse(run?.ended ?? '');
    const took = Number.isFinite(started) && Number.isFinite(ended) && ended >= started ? formatDuration(ended - started) : '';
    const prompt = this.runPrompt(id);
    const folded = this.foldedRuns.has(id);
    // Drawn again only when what it says changed.
    const said = JSON.stringify([status, took, prompt, folded]);
    if (head.dataset.said === said) return;
    head.dataset.said = said;
    head.setAttribute('aria-expanded', folded ? 'false' : 'true');
    head.dataset.status = status;
    replace(
      head,
      h('td', { colspan: '5' }, h('span', { class: 'fold', text: folded ? '▸' : '▾' }), ' ', h('strong', { text: `Run ${id}` }), ` · ${status}`, took ? ` · ${took}` : '', prompt ? h('span', { class: 'run-prompt', text: ` · ${prompt}` }) : ''),
    );
  }

  runPrompt(id) {
    return this.prompts.get(id) ?? '';
  }

  drawCall(tr, call) {
    const open = this.openCalls.has(call.key);
    tr.setAttribute('aria-expanded', open ? 'true' : 'false');
    tr.dataset.status = call.status;
    const took = formatDuration(durationMs(call));
    const first = this.events.get(call.events[0]);
    replace(
      tr,
      h('td', {}, first ? h('time', { datetime: String(first.time ?? ''), text: clock(first.time) }) : ''),
      h('td', {}, h('span', { class: 'fold', text: open ? '▾' : '▸' }), ' ', h('code', { text: 'tool call' })),
      h('td', {}, h('span', { class: `call-status call-${call.status}`, text: callStatus(call) })),
      h('td', { class: 'summary', text: `${call.name}${took ? ` · ${took}` : ''} · ${call.events.length} event${call.events.length === 1 ? '' : 's'}` }),
      h('td', {}),
    );
  }

  toggleCall(key) {
    if (this.openCalls.has(key)) this.openCalls.delete(key);
    else this.openCalls.add(key);
    const call = this.calls.get(key);
    const row = this.callRows.get(key);
    if (call && row) this.drawCall(row, call);
    this.refilter();
  }

  toggleRun(run) {
    if (this.foldedRuns.has(run)) this.foldedRuns.delete(run);
    else this.foldedRuns.add(run);
    const head = this.runHeads.get(run);
    const s = this.session();
    if (head) this.drawRunHead(head, s?.runs.get(run), run);
    this.refilter();
  }

  /** Whether a row shows: its run not folded, its call open (for a call's
   * events), and the filter matching it (a call's row matches when one of
   * its events does). */
  show(tr) {
    if (tr.classList.contains('run-head')) {
      tr.hidden = false;
      return;
    }
    let visible = !(tr.dataset.run && this.foldedRuns.has(tr.dataset.run));
    if (visible && tr.classList.contains('call')) {
      const call = this.calls.get(tr.dataset.call);
      visible = Boolean(call) && call.events.some((id) => this.passes(this.events.get(id)));
    } else if (visible) {
      if (tr.dataset.call && !this.openCalls.has(tr.dataset.call)) visible = false;
      else visible = this.passes(this.events.get(tr.dataset.event));
    }
    tr.hidden = !visible;
  }

  passes(event) {
    if (!event) return false;
    return matches(event, this.filter, summarize(event));
  }

  refilter() {
    const fam = this.familyPick.value;
    this.filter = {
      families: fam ? new Set([fam]) : null,
      lowest: this.severityPick.value || null,
      text: this.search.value,
    };
    for (const tr of this.timeline.children) this.show(tr);
    this.countShown();
  }

  countShown() {
    if (!narrows(this.filter)) {
      this.shownNote.hidden = true;
      return;
    }
    let shown = 0;
    for (const event of this.events.values()) if (this.passes(event)) shown += 1;
    this.shownNote.hidden = false;
    this.shownNote.textContent = `${shown} of ${this.events.size} events match.`;
  }

  setFollowing(on, scroll = true) {
    this.following = on;
    this.followBox.checked = on;
    this.jump.hidden = on;
    if (on && scroll) this.toLatest();
  }

  /** Scrolls the timeline's box to its newest row. */
  toLatest() {
    if (this.pointerInside) return;
    this.scrolling = true;
    this.box.scrollTop = this.box.scrollHeight;
    // The scroll event of our own move is not the person scrolling up.
    requestAnimationFrame(() => {
      this.scrolling = false;
    });
  }

  /** A person scrolling the timeline up stops following it. */
  onScroll() {
    if (this.scrolling) return;
    const atEnd = this.box.scrollTop + this.box.clientHeight >= this.box.scrollHeight - 48;
    if (!atEnd && this.following) this.setFollowing(false, false);
    else if (atEnd && !this.following) this.setFollowing(true, false);
  }

  row(event) {
    const severity = severityOf(event);
    let cause = '';
    if (typeof event.cause === 'string') {
      cause = h('a', {
        href: `#${this.app.route}`,
        class: 'cause',
        'data-cause': event.cause,
        title: `Go to ${event.cause}`,
        text: shortId(event.cause),
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
      { class: `sev-${severity}`, role: 'row', 'data-event': event.id, 'data-type': event.type, tabindex: '-1' },
      h('td', { role: 'cell' }, h('time', { datetime: String(event.time ?? ''), text: clock(event.time) })),
      h('td', { role: 'cell' }, h('code', { text: event.type })),
      h('td', { role: 'cell' }, h('span', { class: `sev sev-${severity}`, text: severity })),
      h('td', { role: 'cell', class: 'summary', text: summarize(event) }),
      h('td', { role: 'cell' }, cause),
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
    // A folded run, a closed call or a filter may hide it: show it.
    if (target.hidden) {
      if (target.dataset.run) this.foldedRuns.delete(target.dataset.run);
      if (target.dataset.call) this.openCalls.add(target.dataset.call);
      if (!this.passes(this.events.get(id))) {
        this.familyPick.value = '';
        this.severityPick.value = '';
        this.search.value = '';
      }
      const s = this.session();
      for (const [run, head] of this.runHeads) this.drawRunHead(head, s?.runs.get(run), run);
      for (const [key, row] of this.callRows) {
        const call = this.calls.get(key);
        if (call) this.drawCall(row, call);
      }
      this.refilter();
    }
    this.setFollowing(false, false);
    target.classList.add('followed');
    target.scrollIntoView({ block: 'center' });
    target.focus();
  }
}
