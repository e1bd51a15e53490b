// The fleet table's filters, fold and orders.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ORDERS, arrange, defaults } from '../../ui/js/sessions.js';

const S = (session, agent, state, last, pending = 0) => ({ session, agent, source: `urn:${agent}`, state, last, pending: Array(pending).fill('r') });
const stateOf = (s) => s.state;
const fleet = [
  S('a1', 'claude-code', 'running', 10),
  S('a2', 'codex', 'ended', 50),
  S('a3', 'claude-code', 'waiting', 30, 2),
  S('a4', 'codex', 'running', 40, 1),
  S('a5', 'claude-code', 'ended', 5),
];
const ids = (r) => r.rows.map((s) => s.session);

test('by default: newest first, ended sessions folded away and counted', () => {
  const r = arrange(fleet, defaults(), stateOf);
  assert.deepEqual(ids(r), ['a4', 'a3', 'a1']);
  assert.equal(r.endedHidden, 2);
  assert.deepEqual(r.agents, ['claude-code', 'codex']);
  assert.deepEqual(ids(arrange(fleet, { ...defaults(), showEnded: true }, stateOf)), ['a5', 'a4', 'a3', 'a2', 'a1']);
});

test('filters by agent, state and text; asking for ended shows them', () => {
  assert.deepEqual(ids(arrange(fleet, { ...defaults(), agent: 'codex' }, stateOf)), ['a4']);
  assert.deepEqual(ids(arrange(fleet, { ...defaults(), state: 'waiting' }, stateOf)), ['a3']);
  const ended = arrange(fleet, { ...defaults(), state: 'ended' }, stateOf);
  assert.deepEqual(ids(ended), ['a5', 'a2']);
  assert.equal(ended.endedHidden, 0);
  assert.deepEqual(ids(arrange(fleet, { ...defaults(), text: '  A3 ' }, stateOf)), ['a3']);
  assert.deepEqual(ids(arrange(fleet, { ...defaults(), text: 'urn:codex', showEnded: true }, stateOf)), ['a4', 'a2']);
  assert.deepEqual(ids(arrange(fleet, { ...defaults(), agent: 'nobody' }, stateOf)), []);
});

test('orders a person picks; ties keep the newest first', () => {
  const all = { ...defaults(), showEnded: true };
  assert.deepEqual(ids(arrange(fleet, { ...all, order: 'activity' }, stateOf)), ['a2', 'a4', 'a3', 'a1', 'a5']);
  assert.deepEqual(ids(arrange(fleet, { ...all, order: 'pending' }, stateOf)), ['a3', 'a4', 'a5', 'a2', 'a1']);
  assert.deepEqual(ids(arrange(fleet, { ...all, order: 'name' }, stateOf)), ['a1', 'a2', 'a3', 'a4', 'a5']);
  assert.deepEqual(ids(arrange(fleet, { ...all, order: 'nonsense' }, stateOf)), ['a5', 'a4', 'a3', 'a2', 'a1']);
  assert.equal(Object.keys(ORDERS)[0], 'appeared');
});

test('odd sessions: no agent, no last activity, a session id that is not a string', () => {
  const odd = [{ session: 7, source: 'urn:x', state: 'running', last: null }, { session: 'b', agent: '', source: 'urn:y', state: 'running', last: 'not a time' }];
  const r = arrange(odd, { ...defaults(), order: 'activity' }, stateOf);
  assert.equal(r.rows.length, 2);
  assert.deepEqual(r.agents, []);
  assert.deepEqual(ids(arrange(odd, { ...defaults(), order: 'name' }, stateOf)), [7, 'b']);
});
