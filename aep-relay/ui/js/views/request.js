// One attention request as a card: what is asked (with what its capture
// level means for the text), how long it has waited, the answer controls
// when it can be answered from here (buttons, free text, or a real form
// for `kind: "form"`), and what became of each answer sent: the ack, a
// relay refusal, a timeout with a retry, then the outcome events.

import { h, idChip, replace, uid } from '../dom.js';
import { OTHER, collect, fieldsOf, carriesFreeText, own, put } from '../form.js';
import { answerCapture, retriable } from '../command.js';
import { ago, captureNote, captureOf, captureRef, shortId, summarize } from '../summary.js';

/** Single selects with more choices than this render as a <select>. */
const RADIO_MAX = 6;

function dataOf(event) {
  return event.data && typeof event.data === 'object' && !Array.isArray(event.data) ? event.data : {};
}

export class RequestCard {
  /**
   * `ctx`: `fleet`, `tracker`, `reach(request)`, `send(request, answer,
   * capture)` (returns the command record or a refusal string),
   * `retry(id)`, `sessionHref(key)`, `now()`.
   */
  constructor(request, ctx) {
    this.request = request;
    this.ctx = ctx;
    this.data = dataOf(request.event);
    this.placeholder = captureOf(request.event) === 'metadata' || captureOf(request.event) === 'none';
    this.commands = [];
    this.build();
  }

  build() {
    const r = this.request;
    const headingId = uid('req');
    this.waited = h('span', { class: 'waited' });
    this.stateLine = h('p', { class: 'req-state' });
    this.reachLine = h('p', { class: 'unreachable', hidden: true });
    this.statusList = h('ul', { class: 'sent', role: 'status', 'aria-live': 'polite' });
    const note = captureNote(r.event);
    const prompt = typeof this.data.prompt === 'string' ? this.data.prompt : '';
    this.controls = this.buildControls();
    this.el = h(
      'article',
      { class: 'request', 'data-request': r.id, 'aria-labelledby': headingId, tabindex: '-1' },
      h(
        'header',
        {},
        h('span', { class: `kind kind-${this.data.kind || 'other'}`, text: this.data.kind || 'request' }),
        h('h3', { id: headingId, class: this.placeholder ? 'prompt placeholder' : 'prompt', text: prompt || '(no prompt)' }),
        h(
          'p',
          { class: 'req-meta' },
          h('a', { href: this.ctx.sessionHref(r.sessionKey), text: r.session }),
          ` · ${r.event.agent || ''} · waiting `,
          this.waited,
        ),
      ),
      note ? h('p', { class: `capture-note capture-${captureOf(r.event)}`, title: captureRef(r.event), text: note }) : null,
      this.stateLine,
      this.reachLine,
      this.controls,
      this.statusList,
    );
    this.update();
  }

  buildControls() {
    const kind = this.data.kind;
    if (kind === 'form') return this.buildForm();
    const wrap = h('div', { class: 'answer' });
    const options = Array.isArray(this.data.options) ? this.data.options.filter((o) => o && typeof o.id === 'string') : [];
    if (options.length) {
      const group = h('div', { class: 'options', role: 'group', 'aria-label': 'Answers' });
      for (const o of options) {
        const label = typeof o.label === 'string' && o.label !== '' ? o.label : o.id;
        group.append(
          h('button', {
            type: 'button',
            class: this.placeholder ? 'option placeholder' : 'option',
            'data-option': o.id,
            text: label,
            on: { click: () => this.submit({ option: o.id }, false) },
          }),
        );
      }
      wrap.append(group);
    }
    if (['input', 'review', 'other'].includes(kind) || options.length === 0) {
      const id = uid('text');
      const area = h('textarea', { id, rows: 2, name: 'text' });
      this.textError = h('p', { class: 'error', id: `${id}-error`, hidden: true });
      const form = h(
        'form',
        { class: 'free-text', novalidate: true },
        h('label', { for: id, text: 'Your answer (free text)' }),
        area,
        this.textError,
        h('button', { type: 'submit', text: 'Send answer' }),
      );
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        if (area.value.trim() === '') {
          this.textError.textContent = 'Type an answer first.';
          this.textError.hidden = false;
          area.setAttribute('aria-invalid', 'true');
          area.setAttribute('aria-describedby', this.textError.id);
          area.focus();
          return;
        }
        this.textError.hidden = true;
        area.removeAttribute('aria-invalid');
        this.submit({ text: area.value }, true);
      });
      wrap.append(form);
    }
    this.inputs = wrap;
    return wrap;
  }

  buildForm() {
    const { fields, skipped } = fieldsOf(this.data);
    this.fields = fields;
    // By field id, which may be any string (`__proto__`, `constructor`).
    this.readers = new Map();
    this.errorSlots = new Map();
    this.firstInputs = new Map();
    const form = h('form', { class: 'form-answer', novalidate: true, 'data-form': this.request.id });
    if (skipped.length) {
      form.append(h('p', { class: 'warning', text: `This form has fields the page cannot show (${skipped.join(', ')}); an answer may be refused.` }));
    }
    for (const f of fields) form.append(this.field(f));
    this.summaryLine = h('p', { class: 'error form-errors', hidden: true, role: 'alert' });
    form.append(this.summaryLine, h('button', { type: 'submit', class: 'send', text: 'Send answer' }));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.sendForm();
    });
    // Once errors show, each edit re-checks, so a fixed field clears.
    const recheck = () => {
      if (this.showingErrors) this.check(false);
    };
    form.addEventListener('input', recheck);
    form.addEventListener('change', recheck);
    this.inputs = form;
    // Folded in the inbox, opened on the session page (see `expand`).
    this.details = h('details', { class: 'form-box' }, h('summary', { text: `Answer the form (${fields.length} field${fields.length === 1 ? '' : 's'})` }), form);
    return this.details;
  }

  /** Opens a folded form (once per view that asks). */
  expand() {
    if (this.details) this.details.open = true;
  }

  labelText(f) {
    return [f.label, f.required ? h('span', { class: 'req', text: ' (required)' }) : null];
  }

  field(f) {
    const id = uid(`f-${f.type}`);
    const errorId = `${id}-error`;
    const error = h('p', { class: 'error', id: errorId, hidden: true });
    this.errorSlots.set(f.id, error);
    const cls = this.placeholder ? 'field placeholder-labels' : 'field';
    const common = { 'aria-required': f.required ? 'true' : null };
    if (f.type === 'string' || f.type === 'number') {
      const input = h('input', {
        id,
        type: f.type === 'number' ? 'number' : 'text',
        name: f.id,
        min: f.min ?? null,
        max: f.max ?? null,
        step: f.type === 'number' ? 'any' : null,
        inputmode: f.type === 'number' ? 'decimal' : null,
        ...common,
      });
      this.firstInputs.set(f.id, input);
      this.readers.set(f.id, () => ({ text: input.value, bad: input.validity.badInput }));
      const range = f.type === 'number' && (f.min !== null || f.max !== null)
        ? h('span', { class: 'hint', text: ` ${f.min !== null ? `from ${f.min}` : ''}${f.min !== null && f.max !== null ? ' ' : ''}${f.max !== null ? `to ${f.max}` : ''}` })
        : null;
      return h('div', { class: cls, 'data-field': f.id }, h('label', { for: id }, this.labelText(f), range), input, error);
    }
    if (f.type === 'boolean') {
      const input = h('input', { id, type: 'checkbox', name: f.id, ...common });
      this.firstInputs.set(f.id, input);
      this.readers.set(f.id, () => ({ checked: input.checked }));
      return h('div', { class: `${cls} boolean`, 'data-field': f.id }, input, h('label', { for: id }, this.labelText(f)), error);
    }
    return f.multi ? this.multi(f, id, error, cls) : this.single(f, id, error, cls);
  }

  otherInput(f, id, onType) {
    const otherId = `${id}-other-text`;
    const input = h('input', { id: otherId, type: 'text', name: `${f.id}.other`, class: 'other-text', on: { input: onType } });
    return { input, label: h('label', { for: otherId, class: 'other-label', text: `Other answer for “${f.label}”` }) };
  }

  single(f, id, error, cls) {
    if (f.choices.length > RADIO_MAX) {
      const select = h('select', { id, name: f.id, 'aria-required': f.required ? 'true' : null },
        h('option', { value: '', text: '— choose —' }),
        f.choices.map((c) => h('option', { value: c.id, text: c.label })),
        f.other ? h('option', { value: OTHER, text: 'Other…' }) : null);
      this.firstInputs.set(f.id, select);
      let other = null;
      if (f.other) other = this.otherInput(f, id, () => { select.value = OTHER; });
      this.readers.set(f.id, () => ({ choice: select.value === '' ? null : select.value, otherText: other ? other.input.value : '' }));
      return h('div', { class: cls, 'data-field': f.id }, h('label', { for: id }, this.labelText(f)), select, other ? [other.label, other.input] : null, error);
    }
    const radios = [];
    const set = h('fieldset', { class: `${cls} choices`, 'data-field': f.id, 'aria-required': f.required ? 'true' : null }, h('legend', {}, this.labelText(f)));
    f.choices.forEach((c, i) => {
      const rid = `${id}-${i}`;
      const radio = h('input', { id: rid, type: 'radio', name: id, value: c.id });
      radios.push(radio);
      set.append(h('div', { class: 'choice' }, radio, h('label', { for: rid, text: c.label })));
    });
    let other = null;
    if (f.other) {
      const rid = `${id}-other`;
      const radio = h('input', { id: rid, type: 'radio', name: id, value: OTHER });
      radios.push(radio);
      other = this.otherInput(f, id, () => { radio.checked = true; });
      set.append(h('div', { class: 'choice other' }, radio, h('label', { for: rid, text: 'Other' }), other.label, other.input));
    }
    this.firstInputs.set(f.id, radios[0]);
    set.append(error);
    this.readers.set(f.id, () => {
      const picked = radios.find((r) => r.checked);
      return { choice: picked ? picked.value : null, otherText: other ? other.input.value : '' };
    });
    return set;
  }

  multi(f, id, error, cls) {
    const boxes = [];
    const set = h('fieldset', { class: `${cls} choices multi`, 'data-field': f.id, 'aria-required': f.required ? 'true' : null }, h('legend', {}, this.labelText(f), h('span', { class: 'hint', text: ' (pick any)' })));
    f.choices.forEach((c, i) => {
      const cid = `${id}-${i}`;
      const box = h('input', { id: cid, type: 'checkbox', name: f.id, value: c.id });
      boxes.push(box);
      set.append(h('div', { class: 'choice' }, box, h('label', { for: cid, text: c.label })));
    });
    let otherBox = null;
    let other = null;
    if (f.other) {
      const cid = `${id}-other`;
      otherBox = h('input', { id: cid, type: 'checkbox', name: `${f.id}.other-box`, value: OTHER });
      other = this.otherInput(f, id, () => { otherBox.checked = other.input.value !== ''; });
      set.append(h('div', { class: 'choice other' }, otherBox, h('label', { for: cid, text: 'Other' }), other.label, other.input));
    }
    this.firstInputs.set(f.id, boxes[0] || otherBox);
    set.append(error);
    this.readers.set(f.id, () => ({
      choices: boxes.filter((b) => b.checked).map((b) => b.value),
      other: otherBox ? otherBox.checked : false,
      otherText: other ? other.input.value : '',
    }));
    return set;
  }

  sendForm() {
    const { values, errors } = this.check(true);
    if (Object.keys(errors).length) return;
    this.submit({ values }, carriesFreeText(this.fields, values));
  }

  /** Reads the inputs, shows each error at its field (moving focus to
   * the first when `focus`), and returns the values and errors. */
  check(focus) {
    const raw = {};
    for (const [id, read] of this.readers) put(raw, id, read());
    const { values, errors } = collect(this.fields, raw);
    let first = null;
    for (const f of this.fields) {
      const slot = this.errorSlots.get(f.id);
      const input = this.firstInputs.get(f.id);
      const error = own(errors, f.id);
      const container = this.inputs.querySelector(`[data-field="${CSS.escape(f.id)}"]`);
      if (error !== undefined) {
        slot.textContent = error;
        slot.hidden = false;
        for (const target of [input, container]) {
          if (!target) continue;
          target.setAttribute('aria-invalid', 'true');
          target.setAttribute('aria-describedby', slot.id);
        }
        if (!first) first = input;
      } else {
        slot.hidden = true;
        slot.textContent = '';
        for (const target of [input, container]) {
          if (!target) continue;
          target.removeAttribute('aria-invalid');
          target.removeAttribute('aria-describedby');
        }
      }
    }
    const count = Object.keys(errors).length;
    this.showingErrors = count > 0;
    this.summaryLine.hidden = count === 0;
    this.summaryLine.textContent = count ? `Not sent: ${count} field${count === 1 ? '' : 's'} to fix.` : '';
    if (count && focus && first) first.focus();
    return { values, errors };
  }

  submit(answer, freeText) {
    const capture = answerCapture(answer, freeText);
    const sent = this.ctx.send(this.request, answer, capture);
    if (typeof sent === 'string') {
      this.commands.push({ local: sent });
    } else {
      this.commands.push({ id: sent.id });
    }
    this.update();
  }

  /** Refreshes what changes: the wait, the state, reachability, the
   * sent answers and their outcomes. The form itself is never rebuilt,
   * so what a person typed stays. */
  update() {
    const r = this.request;
    this.waited.textContent = ago(Date.parse(r.since), this.ctx.now());
    if (r.state === 'pending' && r.sessionEnded !== null && r.sessionEnded !== undefined) {
      this.stateLine.textContent = 'Closed without an answer: the session ended.';
    } else if (r.state === 'pending') {
      this.stateLine.textContent = r.answered ? 'Answered; waiting for the agent to resolve it.' : 'Pending.';
    } else if (r.state === 'timeout') {
      this.stateLine.textContent = 'Timed out: the agent stopped waiting for an answer.';
    } else {
      const d = r.closedBy ? dataOf(r.closedBy) : {};
      this.stateLine.textContent = `Resolved: ${typeof d.resolution === 'string' ? d.resolution : 'closed'}.`;
    }
    this.el.dataset.state = r.state === 'pending' && r.sessionEnded !== null && r.sessionEnded !== undefined ? 'closed-unanswered' : r.state;
    if (r.state !== 'pending' && this.closedSeen === undefined) this.closedSeen = this.ctx.now();
    const reach = this.ctx.reach(r);
    this.reachLine.hidden = !reach.why;
    this.reachLine.textContent = reach.why || '';
    if (reach.ref) this.reachLine.title = reach.ref;
    else this.reachLine.removeAttribute('title');
    // Either a Retry or the controls, never both: an answer sent and not
    // yet settled holds the controls (shown, disabled); one that timed
    // out or that the relay refused, when it may be sent again as it is,
    // leaves the Retry its one way on (the controls hidden); one the
    // relay refused for what it says gives the controls back.
    const records = this.commands.map((c) => c.id && this.ctx.tracker.sent.get(c.id)).filter(Boolean);
    const busy = records.some((record) => record.state === 'sent' || record.state === 'accepted');
    this.controls.hidden = !reach.ok || records.some(retriable);
    for (const el of this.controls.querySelectorAll('input, select, textarea, button')) el.disabled = busy || !reach.ok;
    this.renderSent();
  }

  renderSent() {
    const signature = JSON.stringify(this.commands.map((c) => {
      const record = c.id && this.ctx.tracker.sent.get(c.id);
      return record ? [record.id, record.state, record.tries, this.ctx.fleet.outcomes(record.id).length] : c.local;
    }));
    if (signature === this.signature) return;
    this.signature = signature;
    const items = [];
    for (const c of this.commands) {
      if (c.local) {
        items.push(h('li', { class: 'refused' }, `Not sent: ${c.local}`));
        continue;
      }
      const record = this.ctx.tracker.sent.get(c.id);
      if (!record) continue;
      const li = h('li', { class: `command command-${record.state}`, 'data-command': record.id });
      li.append(h('span', { class: 'cmd-id' }, 'Answer ', idChip(record.id, shortId(record.id), this.ctx.announce), `${record.tries > 1 ? ` (try ${record.tries})` : ''}: `));
      const detail = record.detail ? ` — ${record.detail}` : '';
      switch (record.state) {
        case 'sent':
          li.append(h('span', { class: 'ack', text: 'sent; waiting for the agent’s acknowledgement…' }));
          break;
        case 'accepted':
          li.append(h('span', { class: 'ack', text: 'accepted by the agent (control.accepted).' }));
          break;
        case 'rejected':
          li.append(h('span', { class: 'ack', text: `rejected by the agent: ${record.reason || 'no reason'}${detail}` }));
          break;
        case 'refused':
          li.append(h('span', { class: 'ack', text: `refused by the relay: ${record.reason}${detail}${retriable(record) ? '' : '. Send a different answer.'}` }));
          break;
        case 'timeout':
          li.append(h('span', { class: 'ack', text: `timeout: ${record.detail}.` }));
          break;
        default:
      }
      if (retriable(record)) {
        li.append(' ', h('button', { type: 'button', class: 'retry', text: 'Retry (same command)', on: { click: () => this.ctx.retry(record.id) } }));
      }
      const outcomes = this.ctx.fleet.outcomes(record.id).filter((e) => e.type !== 'control.accepted' && e.type !== 'control.rejected');
      if (outcomes.length) {
        li.append(h('ul', { class: 'outcomes' }, outcomes.map((e) => h('li', { 'data-type': e.type }, h('code', { text: e.type }), ` ${summarize(e)}`))));
      }
      items.push(li);
    }
    replace(this.statusList, items);
  }
}
