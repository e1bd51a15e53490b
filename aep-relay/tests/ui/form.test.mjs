// Form fields, the values a person's entries make, and the emitter's
// MUST-reject rules (AEP-0006), checked before sending.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OTHER, check, collect, carriesFreeText, fieldsOf } from '../../ui/js/form.js';

const DEMO = {
  kind: 'form',
  fields: [
    { id: 'branch', type: 'string', label: 'Branch', required: true },
    { id: 'jobs', type: 'number', label: 'Jobs', min: 1, max: 16 },
    { id: 'dry_run', type: 'boolean', label: 'Dry run' },
    { id: 'target', type: 'select', label: 'Target', required: true, choices: [{ id: 'staging', label: 'Staging' }, { id: 'production', label: 'Production' }] },
    { id: 'checks', type: 'select', label: 'Checks', multi: true, choices: [{ id: 'unit', label: 'Unit' }, { id: 'lint', label: 'Lint' }, { id: 'audit', label: 'Audit' }] },
    { id: 'notify', type: 'select', label: 'Notify', other: true, choices: [{ id: 'team', label: 'Team' }, { id: 'nobody', label: 'Nobody' }] },
  ],
};
const { fields } = fieldsOf(DEMO);

test('every field type makes its value; unanswered optional fields are left out', () => {
  const { values, errors } = collect(fields, {
    branch: { text: 'fix/build' },
    jobs: { text: '4' },
    dry_run: { checked: true },
    target: { choice: 'staging' },
    checks: { choices: ['unit', 'audit'], other: false },
    notify: { choice: OTHER, otherText: 'the on-call person' },
  });
  assert.deepEqual(errors, {});
  assert.deepEqual(values, { branch: 'fix/build', jobs: 4, dry_run: true, target: 'staging', checks: ['unit', 'audit'], notify: 'the on-call person' });
  const bare = collect(fields, { branch: { text: 'b' }, target: { choice: 'production' }, jobs: { text: '  ' } });
  assert.deepEqual(bare.values, { branch: 'b', dry_run: false, target: 'production' });
});

test('required fields, ranges and an empty Other are errors at their field', () => {
  const { errors } = collect(fields, { jobs: { text: '99' }, notify: { choice: OTHER, otherText: ' ' } });
  assert.deepEqual(Object.keys(errors).sort(), ['branch', 'jobs', 'notify', 'target']);
  assert.match(errors.branch, /Required/);
  assert.equal(errors.jobs, 'At most 16.');
  assert.match(errors.notify, /Other/);
  assert.equal(collect(fields, { branch: { text: 'b' }, target: { choice: 'staging' }, jobs: { text: '0' } }).errors.jobs, 'At least 1.');
  assert.equal(collect(fields, { branch: { text: 'b' }, target: { choice: 'staging' }, jobs: { text: '1e999' } }).errors.jobs, 'Enter a number.');
});

test('the emitter rules: choice ids, free text only with other, no unknown fields', () => {
  assert.deepEqual(check(fields, { branch: 'b', target: 'moon' }), { target: 'Not one of the choices.' });
  assert.deepEqual(check(fields, { branch: 'b', target: 'staging', checks: ['unit', 'x'] }), { checks: 'Not one of the choices.' });
  assert.deepEqual(check(fields, { branch: 'b', target: 'staging', notify: 'anyone' }), {});
  assert.deepEqual(check(fields, { branch: 'b', target: 'staging', extra: 1 }), { extra: 'This form has no such field.' });
  assert.deepEqual(check(fields, { branch: 'b', target: ['staging'] }), { target: 'Expected one choice.' });
  assert.deepEqual(check(fields, { branch: 7, target: 'staging', dry_run: 'yes' }), { branch: 'Expected text.', dry_run: 'Expected yes or no.' });
});

test('a multi select with other takes free text beside its ids', () => {
  const { fields: f } = fieldsOf({ fields: [{ id: 'm', type: 'select', multi: true, other: true, required: true, label: 'M', choices: [{ id: 'a', label: 'A' }] }] });
  const ok = collect(f, { m: { choices: ['a'], other: true, otherText: 'b' } });
  assert.deepEqual(ok.values, { m: ['a', 'b'] });
  assert.deepEqual(ok.errors, {});
  assert.match(collect(f, { m: { choices: [], other: false } }).errors.m, /at least one/);
  assert.match(collect(f, { m: { choices: [], other: true, otherText: '' } }).errors.m, /Other/);
});

test('malformed field specs are skipped and named; the first of a repeated id counts', () => {
  const { fields: f, skipped } = fieldsOf({ fields: [{ id: 'a', type: 'string', label: 'A' }, { id: 'a', type: 'number', label: 'again' }, { id: 'b', type: 'select', label: 'no choices' }, { type: 'string' }, null, { id: 'c', type: 'date', label: 'C' }] });
  assert.deepEqual(f.map((x) => [x.id, x.type]), [['a', 'string']]);
  assert.deepEqual(skipped, ['a', 'b', '(no id)', '(no id)', 'c']);
});

test('free text is told apart from ids, numbers and booleans', () => {
  assert.equal(carriesFreeText(fields, { jobs: 3, dry_run: false, target: 'staging', checks: ['unit'], notify: 'team' }), false);
  assert.equal(carriesFreeText(fields, { notify: 'someone' }), true);
  assert.equal(carriesFreeText(fields, { branch: 'x' }), true);
});

test('a field id that names an Object member is a field like any other', () => {
  // `constructor` is inherited by every object and `__proto__` sets the
  // prototype when assigned: neither may hide an error or drop a value.
  const spec = JSON.parse(`{"fields": [
    {"id": "constructor", "type": "string", "label": "Builder", "required": true},
    {"id": "__proto__", "type": "number", "label": "Base", "required": true, "max": 9},
    {"id": "toString", "type": "select", "label": "Style", "choices": [{"id": "a"}]}
  ]}`);
  const { fields: odd } = fieldsOf(spec);
  assert.equal(odd.length, 3);
  const empty = collect(odd, JSON.parse('{"constructor": {"text": ""}, "__proto__": {"text": ""}, "toString": {"choice": null}}'));
  assert.deepEqual(Object.keys(empty.errors).sort(), ['__proto__', 'constructor']);
  assert.equal(empty.errors.constructor, 'Required.');
  assert.deepEqual(Object.keys(empty.values), []);
  const high = collect(odd, JSON.parse('{"constructor": {"text": "ci"}, "__proto__": {"text": "12"}, "toString": {"choice": "a"}}'));
  assert.deepEqual(Object.keys(high.errors), ['__proto__']);
  assert.equal(Object.getOwnPropertyDescriptor(high.errors, '__proto__').value, 'At most 9.');
  const ok = collect(odd, JSON.parse('{"constructor": {"text": "ci"}, "__proto__": {"text": "3"}, "toString": {"choice": "a"}}'));
  assert.equal(Object.keys(ok.errors).length, 0);
  // What is sent carries every answered field.
  assert.deepEqual(JSON.parse(JSON.stringify(ok.values)), JSON.parse('{"constructor": "ci", "__proto__": 3, "toString": "a"}'));
  assert.equal(Object.keys(check(odd, JSON.parse('{"constructor": "ci", "__proto__": 3}'))).length, 0);
  assert.equal(carriesFreeText(odd, ok.values), true);
});

test('a number the browser could not read is an error, not a field left out', () => {
  // `<input type=number>` gives '' for text it cannot read ("1,5", "12abc")
  // and says so in `validity.badInput`: the person typed an answer.
  const { values, errors } = collect(fields, {
    branch: { text: 'main' },
    jobs: { text: '', bad: true },
    target: { choice: 'staging' },
  });
  assert.equal(errors.jobs, 'Enter a number.');
  assert.equal('jobs' in values, false);
});
