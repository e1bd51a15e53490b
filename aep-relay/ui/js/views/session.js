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
import { MARGIN_ROWS, moveBy, offsets, rowAt, rowWindow } from '../window.js';
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
    this.expanded = new Set();
    this.title = h('h2', { id: 'session-title', tabindex: '-1' });
    this.facts = h('dl', { class: 'facts' });
    this.runs = h('tbody');
    this.requests = h('div', { class: 'requests' });
    this.noRequests = h('p', { class: 'empty', text: 'No attention requests in this session.' });
    this.dropped = h('p', { class: 'note', hidden: true });
    // Rows are laid out one by one, not as a table's (see style.css), so
    // the table's roles are said outright: a treegrid (runs and calls
    // fold, each row says its level and whether it is open).
    // The rows are one Tab stop (a roving tabindex): the row that last
    // had the focus (`current`, else the first the view shows) takes it,
    // and the arrow keys, j/k, PageUp/PageDown and Home/End move it from
    // row to row, drawing and scrolling to the row they reach. The row
    // with the focus is drawn wherever the view is, so it keeps it. The
    // links in rows are no Tab stops: Enter or ArrowRight on a row goes
    // to its first, Escape or ArrowLeft back to the row (see `onKey`).
    this.timeline = h('tbody', {
      role: 'rowgroup',
      on: {
        keydown: (e) => this.onKey(e),
        focusin: (e) => this.onFocus(e),
      },
    });
    this.current = null;
    this.itemOf = new WeakMap();
    // What the rows between a pinned row and the others stand for.
    this.gap = h('tr', { class: 'gap', role: 'presentation', 'aria-hidden': 'true' });
    this.head = h('thead', { role: 'rowgroup' }, h('tr', { role: 'row', 'aria-rowindex': '1' }, ['Time', 'Type', 'Severity', 'Summary', 'Cause'].map((t) => h('th', { scope: 'col', role: 'columnheader', text: t }))));
    // Only the rows near the view are in the page (see `draw`): the
    // table says how many rows it has, each row its place among them.
    this.table = h('table', { class: 'timeline', role: 'treegrid', 'aria-labelledby': 'timeline-title', 'aria-rowcount': '1' }, this.head, this.timeline);
    this.events = new Map();
    this.order = [];
    this.prompts = new Map();
    this.calls = new Calls();
    this.openCalls = new Set();
    // The timeline's model: every row in order (`items`: a run's head, a
    // call's row, an event's row; each with its element once drawn and
    // its height once measured), by event id, call key and run; the rows
    // shown (`visible`, made again when `stale`).
    this.items = [];
    this.eventItems = new Map();
    this.callItems = new Map();
    this.runItems = new Map();
    this.visible = [];
    this.stale = false;
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
          if (this.following) this.draw();
        },
      },
    });
    // A box made taller or shorter shows other rows.
    if (typeof ResizeObserver === 'function') new ResizeObserver(() => this.schedule()).observe(this.box);
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
        (this.box.append(this.table), this.box),
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
    // The timeline keeps a model of every row (the fold bounds them: the
    // rows of events the fold no longer keeps are let go from the top, so
    // a long session costs the page the same as one of the fold's length)
    // and draws only the rows near the view (`draw`). New events are
    // placed in the fold's order for at most a frame's budget; the rest
    // wait for the next frame (`rendered` counts the events placed or let
    // go, so none is placed twice or skipped, and an event the fold lets
    // go before its turn is never placed).
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
      this.items = this.items.filter((item) => !item.gone);
      this.stale = true;
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
    for (const [run, item] of this.runItems) if (item.el) this.drawRunHead(item.el, s.runs.get(run), run);
    if (added) this.countShown();
    if (added || this.stale) this.draw();
    return left;
  }

  /** Lets go of the model of an event the fold no longer keeps (and of
   * its call's with the call's last event). */
  forget(id) {
    const item = this.eventItems.get(id);
    this.eventItems.delete(id);
    this.events.delete(id);
    if (!item) return;
    item.gone = true;
    const key = item.call;
    const call = key ? this.calls.get(key) : null;
    if (call) {
      call.events = call.events.filter((e) => e !== id);
      const callItem = this.callItems.get(key);
      if (!call.events.length) {
        if (callItem) callItem.gone = true;
        this.callItems.delete(key);
        this.calls.byKey.delete(key);
        this.openCalls.delete(key);
      } else if (callItem?.el) this.drawCall(callItem.el, call);
    }
  }

  /** Adds one event's row to the model, under its run's group, folded
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
    if (run !== null && !this.runItems.has(run)) {
      const head = { kind: 'run', key: run, run, el: null };
      this.runItems.set(run, head);
      this.items.push(head);
    }
    const item = { kind: 'event', key: event.id, run, call: null, family: fam, passes: this.passes(event), el: null };
    const call = this.calls.add(event);
    if (call) {
      item.call = call.key;
      let callItem = this.callItems.get(call.key);
      if (!callItem) {
        callItem = { kind: 'call', key: call.key, run, el: null };
        this.callItems.set(call.key, callItem);
        this.items.push(callItem);
      }
      if (callItem.el) this.drawCall(callItem.el, call);
    }
    if (!this.eventItems.has(event.id)) this.eventItems.set(event.id, item);
    this.items.push(item);
    this.stale = true;
  }

  /** The element of a row of the model, made when it is first drawn. */
  element(item) {
    if (item.el) return item.el;
    if (item.kind === 'run') {
      const run = item.key;
      item.el = h('tr', { class: 'run-head', role: 'row', 'data-run-head': run, tabindex: '-1', 'aria-level': '1', 'aria-expanded': 'true', on: { click: () => this.toggleRun(run), keydown: (e) => this.activate(e, () => this.toggleRun(run)) } });
      this.drawRunHead(item.el, this.session()?.runs.get(run), run);
    } else if (item.kind === 'call') {
      const key = item.key;
      item.el = h('tr', { class: 'call', role: 'row', 'data-call': key, tabindex: '-1', 'aria-level': item.run === null ? '1' : '2', 'aria-expanded': 'false', on: { click: () => this.toggleCall(key), keydown: (e) => this.activate(e, () => this.toggleCall(key)) } });
      if (item.run !== null) item.el.dataset.run = item.run;
      const call = this.calls.get(key);
      if (call) this.drawCall(item.el, call);
    } else {
      const tr = this.row(this.events.get(item.key));
      tr.dataset.family = item.family;
      if (item.run !== null) tr.dataset.run = item.run;
      if (item.call) {
        tr.dataset.call = item.call;
        tr.classList.add('in-call');
      }
      tr.setAttribute('aria-level', String(1 + (item.run !== null) + Boolean(item.call)));
      item.el = tr;
    }
    this.itemOf.set(item.el, item);
    return item.el;
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
      h('td', { role: 'gridcell', colspan: '5' }, h('span', { class: 'fold', text: folded ? '▸' : '▾' }), ' ', h('strong', { text: `Run ${id}` }), ` · ${status}`, took ? ` · ${took}` : '', prompt ? h('span', { class: 'run-prompt', text: ` · ${prompt}` }) : ''),
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
      h('td', { role: 'gridcell' }, first ? h('time', { datetime: String(first.time ?? ''), text: clock(first.time) }) : ''),
      h('td', { role: 'gridcell' }, h('span', { class: 'fold', text: open ? '▾' : '▸' }), ' ', h('code', { text: 'tool call' })),
      h('td', { role: 'gridcell' }, h('span', { class: `call-status call-${call.status}`, text: callStatus(call) })),
      h('td', { role: 'gridcell', class: 'summary', text: `${call.name}${took ? ` · ${took}` : ''} · ${call.events.length} event${call.events.length === 1 ? '' : 's'}` }),
      h('td', { role: 'gridcell' }),
    );
  }

  toggleCall(key) {
    if (this.openCalls.has(key)) this.openCalls.delete(key);
    else this.openCalls.add(key);
    const call = this.calls.get(key);
    const el = this.callItems.get(key)?.el;
    if (call && el) this.drawCall(el, call);
    this.stale = true;
    this.draw();
  }

  toggleRun(run) {
    if (this.foldedRuns.has(run)) this.foldedRuns.delete(run);
    else this.foldedRuns.add(run);
    const el = this.runItems.get(run)?.el;
    if (el) this.drawRunHead(el, this.session()?.runs.get(run), run);
    this.stale = true;
    this.draw();
  }

  /** Whether a row of the model shows: its run not folded, its call open
   * (for a call's events), and the filter matching it (a call's row
   * matches when one of its events does). */
  shows(item) {
    if (item.kind === 'run') return true;
    if (item.run !== null && this.foldedRuns.has(item.run)) return false;
    if (item.kind === 'call') {
      const call = this.calls.get(item.key);
      return Boolean(call) && call.events.some((id) => this.eventItems.get(id)?.passes);
    }
    if (item.call && !this.openCalls.has(item.call)) return false;
    return item.passes;
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
    for (const item of this.items) if (item.kind === 'event') item.passes = this.passes(this.events.get(item.key));
    this.stale = true;
    this.countShown();
    this.draw();
  }

  countShown() {
    if (!narrows(this.filter)) {
      this.shownNote.hidden = true;
      return;
    }
    let shown = 0;
    for (const item of this.eventItems.values()) if (item.passes) shown += 1;
    this.shownNote.hidden = false;
    this.shownNote.textContent = `${shown} of ${this.events.size} events match.`;
  }

  /** The rows that show, in order (made again when the model changed). */
  shown() {
    if (this.stale) {
      this.visible = this.items.filter((item) => this.shows(item));
      this.stale = false;
    }
    return this.visible;
  }

  /** Where the rows shown start and the view is: the rows' offsets (from
   * the top of the rows), the top of the rows in the box's scrolled
   * content and the view's height. */
  geometry() {
    const rows = this.shown();
    const offs = offsets(rows.map((item) => item.height));
    const head = this.head.offsetHeight;
    const view = this.box.clientHeight || window.innerHeight;
    return { rows, offs, head, view };
  }

  /**
   * Draws the rows near the view and no others: the rows the view meets
   * and a margin on each side, the box's padding standing for the rest
   * (their measured heights, or the mean of those measured), so the
   * scroll bar is the whole timeline's. While following, the view is the
   * timeline's end. Rows drawn are measured, and the view kept on the row
   * it showed when a measure moves it.
   */
  draw() {
    // A person who scrolled up since the page last moved the view stops
    // following, whether or not the scroll event came yet.
    if (this.following && this.lastTop !== undefined && this.box.scrollTop < this.lastTop - 1 && !this.atEnd()) this.setFollowing(false, false);
    // The rows shown before this draw: where a row that leaves them was.
    const before = this.visible;
    const { rows, offs, head, view } = this.geometry();
    const pinned = this.following && !this.pointerInside;
    const top = pinned ? offs[rows.length] + head - view : this.box.scrollTop;
    let refocus = false;
    if (this.current && (this.current.gone || !rows.includes(this.current))) {
      // A row with the keyboard's focus that leaves (the fold let its
      // event go) passes the focus to the next row still shown, else the
      // one before, so the focus never falls to the page's body.
      const lost = this.current;
      this.current = null;
      if (lost.el && lost.el.contains(document.activeElement)) {
        this.current = neighbour(before, lost, rows);
        refocus = this.current !== null;
      }
    }
    const w = rowWindow(offs, top - head, view, MARGIN_ROWS, this.current ? rows.indexOf(this.current) : -1);
    const at = (i) => {
      const el = this.element(rows[i]);
      const index = String(i + 2);
      if (el.getAttribute('aria-rowindex') !== index) el.setAttribute('aria-rowindex', index);
      return el;
    };
    const nodes = [];
    if (w.pin && w.pin.index < w.start) nodes.push(at(w.pin.index), this.gap);
    for (let i = w.start; i < w.end; i += 1) nodes.push(at(i));
    if (w.pin && w.pin.index >= w.end) nodes.push(this.gap, at(w.pin.index));
    keep(this.timeline, nodes);
    this.table.setAttribute('aria-rowcount', String(rows.length + 1));
    this.table.dataset.events = String(this.order.length);
    // The one Tab stop: the current row, else the first the view shows.
    const anchor = rowAt(offs, Math.max(0, top - head));
    const stop = this.current ?? (anchor < rows.length ? rows[anchor] : null);
    if (this.tabStop && this.tabStop !== stop?.el) this.tabStop.tabIndex = -1;
    this.tabStop = stop?.el ?? null;
    if (this.tabStop) this.tabStop.tabIndex = 0;
    const pad = (o) => {
      this.timeline.style.paddingTop = `${w.pin && w.pin.index < w.start ? o[w.pin.index] : o[w.start]}px`;
      this.timeline.style.paddingBottom = `${o[rows.length] - (w.pin && w.pin.index >= w.end ? o[w.pin.index + 1] : o[w.end])}px`;
      if (w.pin) this.gap.style.height = `${w.pin.index < w.start ? o[w.start] - o[w.pin.index + 1] : o[w.pin.index] - o[w.end]}px`;
    };
    pad(offs);
    // Measured: the rows drawn keep their heights; the padding follows.
    let moved = false;
    const measure = (i) => {
      const height = rows[i].el.offsetHeight;
      if (height > 0 && height !== rows[i].height) {
        rows[i].height = height;
        moved = true;
      }
    };
    for (let i = w.start; i < w.end; i += 1) measure(i);
    if (w.pin) measure(w.pin.index);
    if (moved) {
      const now = offsets(rows.map((item) => item.height));
      pad(now);
      if (!pinned && anchor < rows.length && now[anchor] !== offs[anchor]) this.scrollBy(now[anchor] - offs[anchor]);
    }
    if (pinned) this.toLatest();
    if (refocus) this.element(this.current).focus({ preventScroll: true });
  }

  /** Draws again in the next frame (once however often asked). */
  schedule() {
    if (this.drawing) return;
    this.drawing = true;
    requestAnimationFrame(() => {
      this.drawing = false;
      this.draw();
    });
  }

  /** Moves the box's view by `dy` px, a move of the page's, not the
   * person's: `lastTop` is where the page left the view, so a scroll
   * event finds the person's moves only. */
  scrollBy(dy) {
    this.box.scrollTop += dy;
    this.lastTop = this.box.scrollTop;
  }

  atEnd() {
    return this.box.scrollTop + this.box.clientHeight >= this.box.scrollHeight - 48;
  }

  setFollowing(on, scroll = true) {
    this.following = on;
    this.followBox.checked = on;
    this.jump.hidden = on;
    if (on && scroll) this.draw();
  }

  /** Scrolls the timeline's box to its newest row. */
  toLatest() {
    if (this.pointerInside) return;
    this.box.scrollTop = this.box.scrollHeight;
    this.lastTop = this.box.scrollTop;
  }

  /** Draws the rows the view reaches; a person scrolling the timeline up
   * stops following it, scrolling down to its end follows it again. The
   * page's own moves leave `lastTop` where they put the view, and a view
   * cut short when the timeline shrinks is at its end: neither is taken
   * for the person's. */
  onScroll() {
    this.schedule();
    const top = this.box.scrollTop;
    const moved = top - (this.lastTop ?? top);
    this.lastTop = top;
    const atEnd = this.atEnd();
    if (!atEnd && this.following && moved < 0) this.setFollowing(false, false);
    else if (atEnd && !this.following && moved > 0) this.setFollowing(true, false);
  }

  /** The row that took the focus (a click, a cause followed, Tab) is the
   * timeline's place for the keyboard from now on. */
  onFocus(e) {
    const tr = e.target.closest?.('tr');
    const item = tr ? this.itemOf.get(tr) : null;
    if (!item || item === this.current) return;
    this.current = item;
    if (this.tabStop && this.tabStop !== tr) this.tabStop.tabIndex = -1;
    this.tabStop = tr;
    tr.tabIndex = 0;
  }

  /** The arrow keys, j/k, PageUp/PageDown and Home/End move the focus
   * from row to row (keys typed into a link or with a modifier are left
   * alone, but for the arrows on a link). On a row, Enter or ArrowRight
   * goes to the row's first link (ArrowRight opens a folded run or call,
   * ArrowLeft folds an open one, else goes to the run or call the row is
   * in); on a link, ArrowRight goes to the next, Escape or ArrowLeft
   * back to its row. */
  onKey(e) {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return;
    const tr = e.target.closest('tr');
    const item = tr ? this.itemOf.get(tr) : null;
    if (!item) return;
    const links = [...tr.querySelectorAll('a[href], button, input, select, textarea')];
    if (e.target !== tr) {
      const at = links.indexOf(e.target);
      if (e.key === 'Escape' || (e.key === 'ArrowLeft' && at <= 0)) tr.focus();
      else if (e.key === 'ArrowLeft') links[at - 1].focus();
      else if (e.key === 'ArrowRight') links[at + 1]?.focus();
      if (e.key === 'Escape' || e.key === 'ArrowLeft' || e.key === 'ArrowRight') e.preventDefault();
      if (e.key !== 'ArrowUp' && e.key !== 'ArrowDown' && e.key !== 'PageUp' && e.key !== 'PageDown' && e.key !== 'Home' && e.key !== 'End') return;
    } else if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
      e.preventDefault();
      const open = tr.getAttribute('aria-expanded');
      const toggle = item.kind === 'run' ? () => this.toggleRun(item.key) : item.kind === 'call' ? () => this.toggleCall(item.key) : null;
      if (e.key === 'ArrowRight' && open === 'false') toggle();
      else if (e.key === 'ArrowRight') links[0]?.focus();
      else if (open === 'true') toggle();
      else {
        const parent = (item.call && this.callItems.get(item.call)) || (item.kind !== 'run' && item.run !== null && this.runItems.get(item.run));
        if (parent) this.moveTo(parent);
      }
      return;
    } else if (e.key === 'Enter' && links.length) {
      e.preventDefault();
      links[0].focus();
      return;
    }
    const { rows, offs, view } = this.geometry();
    const at = this.current ? rows.indexOf(this.current) : -1;
    const from = at < 0 ? 0 : offs[at];
    const page = Math.max(1, rowAt(offs, from + view) - Math.max(at, 0) - 1);
    const next = moveBy(e.key, at, rows.length, page);
    if (next === null) return;
    e.preventDefault();
    this.moveTo(rows[next]);
  }

  /** Moves the focus to the row of `item`: the view scrolled to show it
   * (following stops), the row drawn and focused. */
  moveTo(item) {
    this.setFollowing(false, false);
    this.current = item;
    let { rows, offs, head, view } = this.geometry();
    let i = rows.indexOf(item);
    if (i < 0) return;
    const top = this.box.scrollTop;
    if (head + offs[i] < top + head) this.scrollBy(offs[i] - top);
    else if (head + offs[i + 1] > top + view) this.scrollBy(head + offs[i + 1] - view - top);
    this.draw();
    // Drawn and measured: its place may have moved with the measures.
    ({ rows, offs, head, view } = this.geometry());
    i = rows.indexOf(item);
    const now = this.box.scrollTop;
    if (offs[i] < now) this.scrollBy(offs[i] - now);
    else if (head + offs[i + 1] > now + view) this.scrollBy(head + offs[i + 1] - view - now);
    this.draw();
    this.element(item).focus({ preventScroll: true });
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
        tabindex: '-1',
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
      h('td', { role: 'gridcell' }, h('time', { datetime: String(event.time ?? ''), text: clock(event.time) })),
      h('td', { role: 'gridcell' }, h('code', { text: event.type })),
      h('td', { role: 'gridcell' }, h('span', { class: `sev sev-${severity}`, text: severity })),
      h('td', { role: 'gridcell', class: 'summary', text: summarize(event) }),
      h('td', { role: 'gridcell' }, cause),
    );
    return tr;
  }

  /** Moves to the event `id` names, when this timeline holds it: drawn
   * first (the view moved to it), then scrolled to and focused. */
  follow(id) {
    const item = this.eventItems.get(id);
    if (this.followed) this.followed.classList.remove('followed');
    this.followed = null;
    if (!item) {
      this.app.announce(`Event ${id} is not in this session's timeline.`);
      return;
    }
    // A folded run, a closed call or a filter may hide it: show it.
    if (!this.shown().includes(item)) {
      if (item.run !== null) this.foldedRuns.delete(item.run);
      if (item.call) this.openCalls.add(item.call);
      if (!item.passes) {
        this.familyPick.value = '';
        this.severityPick.value = '';
        this.search.value = '';
      }
      const s = this.session();
      for (const [run, head] of this.runItems) if (head.el) this.drawRunHead(head.el, s?.runs.get(run), run);
      for (const [key, callItem] of this.callItems) {
        const call = this.calls.get(key);
        if (call && callItem.el) this.drawCall(callItem.el, call);
      }
      this.refilter();
    }
    this.setFollowing(false, false);
    const { rows, offs, head, view } = this.geometry();
    const at = rows.indexOf(item);
    this.scrollBy(head + offs[at] - view / 2 - this.box.scrollTop);
    this.draw();
    this.current = item;
    this.draw();
    const target = this.element(item);
    this.followed = target;
    target.classList.add('followed');
    target.scrollIntoView({ block: 'center' });
    this.lastTop = this.box.scrollTop;
    target.focus();
  }
}

/** The row of `rows` nearest after `item` in `before` (the rows shown
 * until now), else nearest before it, else the first of `rows`; null
 * when there are none. */
function neighbour(before, item, rows) {
  const still = new Set(rows);
  const at = before.indexOf(item);
  if (at >= 0) {
    for (let i = at + 1; i < before.length; i += 1) if (still.has(before[i])) return before[i];
    for (let i = at - 1; i >= 0; i -= 1) if (still.has(before[i])) return before[i];
  }
  return rows[0] ?? null;
}

/** Makes `parent`'s children exactly `nodes` (a run of the same ordered
 * list as they were): the rows that left are removed, the new ones put in
 * their place, and the rows that stay are never moved (they keep their
 * focus and layout). */
function keep(parent, nodes) {
  const wanted = new Set(nodes);
  for (const child of [...parent.children]) if (!wanted.has(child)) child.remove();
  let at = parent.firstElementChild;
  for (const node of nodes) {
    if (node === at) at = at.nextElementSibling;
    else parent.insertBefore(node, at);
  }
}
