// AEP-0006 forms: the fields a request asks, the values a person's
// entries make, and the emitter's MUST-reject rules checked before
// anything is sent (every required field answered, choices that are
// choices unless `other`, numbers within min/max), each error named by
// its field. Pure: the page reads its inputs into plain objects first.

/** The `other` choice's value in a single select's raw entry. */
export const OTHER = '\u0000other';

/**
 * The request's fields that can be rendered and answered: well-formed
 * specs, first of each id. A malformed spec is skipped and reported in
 * `skipped` (the form says so; the answer then cannot cover it).
 */
export function fieldsOf(data) {
  const fields = [];
  const skipped = [];
  const ids = new Set();
  for (const f of Array.isArray(data?.fields) ? data.fields : []) {
    const ok =
      f && typeof f === 'object' && typeof f.id === 'string' && f.id !== '' &&
      ['string', 'number', 'boolean', 'select'].includes(f.type) &&
      (f.type !== 'select' || (Array.isArray(f.choices) && f.choices.every((c) => c && typeof c.id === 'string')));
    if (!ok || ids.has(f.id)) {
      skipped.push(f && typeof f.id === 'string' ? f.id : '(no id)');
      continue;
    }
    ids.add(f.id);
    fields.push({
      id: f.id,
      type: f.type,
      label: typeof f.label === 'string' && f.label !== '' ? f.label : f.id,
      required: f.required === true,
      multi: f.type === 'select' && f.multi === true,
      other: f.type === 'select' && f.other === true,
      choices: f.type === 'select' ? f.choices.map((c) => ({ id: c.id, label: typeof c.label === 'string' && c.label !== '' ? c.label : c.id })) : [],
      min: typeof f.min === 'number' ? f.min : null,
      max: typeof f.max === 'number' ? f.max : null,
    });
  }
  return { fields, skipped };
}

/** Sets `obj[key]` as an own member whatever `key` is: a field id may be
 * `__proto__` (an assignment would set the prototype instead) or
 * `constructor` (inherited, so a truthiness check would find it). */
export function put(obj, key, value) {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** `obj[key]` when `obj` has it as its own member, else undefined. */
export function own(obj, key) {
  return obj && Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

function blank(s) {
  return typeof s !== 'string' || s.trim() === '';
}

/**
 * The values a person's entries make, and the errors to show, by field
 * id. `raw[id]` per field type: string `{text}`, number `{text, bad}` (the
 * input's text; `bad` when what was typed is not a number), boolean `{checked}`, single select `{choice}` (a choice
 * id, `OTHER`, or null) with `{otherText}`, multi select `{choices: [ids],
 * other: bool, otherText}`. Unanswered optional fields are left out; a
 * boolean is always answered (unchecked is `false`).
 */
export function collect(fields, raw) {
  const values = {};
  const errors = {};
  for (const f of fields) {
    const r = own(raw, f.id) || {};
    switch (f.type) {
      case 'string':
        if (!blank(r.text)) put(values, f.id, r.text);
        break;
      case 'number': {
        // What was typed the browser could not read as a number (its
        // value is then empty): an error, not an unanswered field.
        if (r.bad === true) {
          put(errors, f.id, 'Enter a number.');
          break;
        }
        if (blank(r.text)) break;
        const n = Number(r.text);
        if (!Number.isFinite(n)) put(errors, f.id, 'Enter a number.');
        else put(values, f.id, n);
        break;
      }
      case 'boolean':
        put(values, f.id, r.checked === true);
        break;
      case 'select':
        if (f.multi) {
          const picked = Array.isArray(r.choices) ? [...r.choices] : [];
          if (r.other) {
            if (blank(r.otherText)) put(errors, f.id, 'Type your answer for “Other”, or untick it.');
            else picked.push(r.otherText);
          }
          if (picked.length) put(values, f.id, picked);
        } else if (r.choice === OTHER) {
          if (blank(r.otherText)) put(errors, f.id, 'Type your answer for “Other”, or pick a choice.');
          else put(values, f.id, r.otherText);
        } else if (typeof r.choice === 'string') {
          put(values, f.id, r.choice);
        }
        break;
      default:
    }
  }
  for (const [id, message] of Object.entries(check(fields, values))) {
    if (own(errors, id) === undefined) put(errors, id, message);
  }
  return { values, errors };
}

/**
 * The emitter's rules (AEP-0006) over a values object: the errors by
 * field id, empty when an emitter must accept it.
 */
export function check(fields, values) {
  const errors = {};
  const known = new Set(fields.map((f) => f.id));
  for (const f of fields) {
    const has = Object.prototype.hasOwnProperty.call(values, f.id);
    const v = own(values, f.id);
    if (!has) {
      if (f.required) put(errors, f.id, f.type === 'select' && f.multi ? 'Required: pick at least one.' : f.type === 'select' ? 'Required: pick one.' : 'Required.');
      continue;
    }
    const ids = new Set(f.choices.map((c) => c.id));
    switch (f.type) {
      case 'string':
        if (typeof v !== 'string') put(errors, f.id, 'Expected text.');
        break;
      case 'number':
        if (typeof v !== 'number' || !Number.isFinite(v)) put(errors, f.id, 'Enter a number.');
        else if (f.min !== null && v < f.min) put(errors, f.id, `At least ${f.min}.`);
        else if (f.max !== null && v > f.max) put(errors, f.id, `At most ${f.max}.`);
        break;
      case 'boolean':
        if (typeof v !== 'boolean') put(errors, f.id, 'Expected yes or no.');
        break;
      case 'select':
        if (f.multi) {
          const items = Array.isArray(v) ? v : typeof v === 'string' && f.other ? [v] : null;
          if (!items) put(errors, f.id, 'Expected a list of choices.');
          else if (items.some((i) => typeof i !== 'string')) put(errors, f.id, 'Expected a list of choices.');
          else if (!f.other && items.some((i) => !ids.has(i))) put(errors, f.id, 'Not one of the choices.');
          else if (f.required && items.length === 0) put(errors, f.id, 'Required: pick at least one.');
        } else if (typeof v !== 'string') put(errors, f.id, 'Expected one choice.');
        else if (!ids.has(v) && !f.other) put(errors, f.id, 'Not one of the choices.');
        break;
      default:
    }
  }
  for (const id of Object.keys(values)) if (!known.has(id)) put(errors, id, 'This form has no such field.');
  return errors;
}

/**
 * Whether values carry free text a person typed (a string field, or an
 * `other` answer): such an answer needs a capture level above
 * `metadata`, while ids, numbers and booleans are structural.
 */
export function carriesFreeText(fields, values) {
  for (const f of fields) {
    if (!Object.prototype.hasOwnProperty.call(values, f.id)) continue;
    const v = own(values, f.id);
    const ids = new Set(f.choices.map((c) => c.id));
    if (f.type === 'string') return true;
    if (f.type === 'select') {
      const items = Array.isArray(v) ? v : [v];
      if (items.some((i) => typeof i === 'string' && !ids.has(i))) return true;
    }
  }
  return false;
}
