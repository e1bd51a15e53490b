// The timeline's reading aids: tool calls folded, filters, durations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Calls, durationMs, everything, family, formatDuration, matches, narrows, severity, toolCall } from '../../ui/js/timeline.js';

let n = 0;
function ev(type, extra = {}) {
  n += 1;
  return { aep: '0.1', id: `e${n}`, type, time: '2026-12-01T10:00:00.000Z', source: 'urn:a', agent: 'a', session: 's', seq: n, ...extra };
}
const tool = (name, callId) => ({ tool: callId === undefined ? { name } : { name, call_id: callId } });
const at = (ms) => new Date(Date.UTC(2026, 11, 1, 10, 0, 0) + ms).toISOString();

test('a call folds its request and its completion, with the time between', () => {
  const calls = new Calls();
  const req = ev('tool.requested', { run: 'r1', time: at(0), data: tool('Bash', 'c1') });
  const done = ev('tool.completed', { run: 'r1', time: at(1500), data: tool('Bash', 'c1') });
  const a = calls.add(req);
  const b = calls.add(done);
  assert.equal(a, b);
  assert.equal(b.status, 'completed');
  assert.equal(b.name, 'Bash');
  assert.deepEqual(b.events, [req.id, done.id]);
  assert.equal(durationMs(b), 1500);
  assert.equal(formatDuration(durationMs(b)), '1.5 s');
});

test('the duration the agent reports wins over the clocks', () => {
  const calls = new Calls();
  calls.add(ev('tool.requested', { time: at(0), data: tool('Read', 'c') }));
  const call = calls.add(ev('tool.failed', { time: at(9000), data: { ...tool('Read', 'c'), error: { message: 'no such file' }, duration_ms: 42 } }));
  assert.equal(call.status, 'failed');
  assert.equal(durationMs(call), 42);
  assert.equal(formatDuration(42), '42 ms');
});

test('a completion before its request, and one with no request at all', () => {
  const calls = new Calls();
  const early = calls.add(ev('tool.completed', { time: at(2000), data: tool('Grep', 'late') }));
  assert.equal(early.status, 'completed');
  assert.equal(durationMs(early), null, 'no start known yet');
  calls.add(ev('tool.requested', { time: at(500), data: tool('Grep', 'late') }));
  assert.equal(durationMs(early), 1500);
  const orphan = calls.add(ev('tool.denied', { time: at(0), data: { ...tool('Write', 'o'), by: 'policy' } }));
  assert.equal(orphan.status, 'denied');
  assert.equal(durationMs(orphan), null);
  assert.equal(formatDuration(null), '');
});

test('the same call id in two runs is two calls; a call without an id is no call', () => {
  const calls = new Calls();
  const one = calls.add(ev('tool.requested', { run: 'r1', data: tool('Bash', 'c1') }));
  const two = calls.add(ev('tool.requested', { run: 'r2', data: tool('Bash', 'c1') }));
  assert.notEqual(one, two);
  assert.equal(calls.add(ev('tool.requested', { data: tool('Bash') })), null);
  assert.equal(toolCall(ev('tool.requested', { data: { tool: { name: 'x', call_id: '' } } })), null);
  assert.equal(toolCall(ev('tool.requested', { data: 'not an object' })), null);
  assert.equal(toolCall(ev('progress.status')), null);
});

test('the first terminal decides; a later one is kept as an event only', () => {
  const calls = new Calls();
  calls.add(ev('tool.requested', { time: at(0), data: tool('Bash', 'c') }));
  calls.add(ev('tool.completed', { time: at(100), data: tool('Bash', 'c') }));
  const call = calls.add(ev('tool.failed', { time: at(900), data: { ...tool('Bash', 'c'), error: {} } }));
  assert.equal(call.status, 'completed');
  assert.equal(durationMs(call), 100);
  assert.equal(call.events.length, 3);
});

test('a redelivered event is one event of its call', () => {
  const calls = new Calls();
  const req = ev('tool.requested', { data: tool('Bash', 'c') });
  calls.add(req);
  const call = calls.add({ ...req });
  assert.deepEqual(call.events, [req.id]);
});

test('filters by type family, lowest severity and text over the payload', () => {
  const warn = ev('error.raised', { severity: 'warning', data: { error: { message: 'Disk FULL on /var' } } });
  const info = ev('progress.status', { data: { message: 'indexing' } });
  const ext = ev('x.acme.thing', {});
  assert.equal(family(warn), 'error');
  assert.equal(family(ext), 'x');
  assert.equal(severity(info), 'info');
  assert.equal(severity({ severity: 'loud' }), 'info');
  assert.ok(matches(info, everything()));
  assert.ok(!narrows(everything()));
  const errors = { families: new Set(['error']), lowest: null, text: '' };
  assert.ok(matches(warn, errors));
  assert.ok(!matches(info, errors));
  const serious = { families: null, lowest: 'warning', text: '' };
  assert.ok(matches(warn, serious));
  assert.ok(!matches(info, serious));
  const disk = { families: null, lowest: null, text: '  disk full ' };
  assert.ok(narrows(disk));
  assert.ok(matches(warn, disk), 'case-insensitive, in the payload');
  assert.ok(!matches(info, disk));
  assert.ok(matches(info, { families: null, lowest: null, text: 'Indexing' }, ''));
  assert.ok(matches(info, { families: null, lowest: null, text: 'a summary' }, 'Only in A SUMMARY'));
});

test('durations read at a glance', () => {
  assert.equal(formatDuration(0), '0 ms');
  assert.equal(formatDuration(12_400), '12 s');
  assert.equal(formatDuration(125_000), '2 min 5 s');
});

test('long ids read short, short ones whole', async () => {
  const { shortId } = await import('../../ui/js/summary.js');
  assert.equal(shortId('01M95GPQG81Q6MKA4V529XP63Q'), '01M9…P63Q');
  assert.equal(shortId('REQ-L'), 'REQ-L');
  assert.equal(shortId('123456789012'), '123456789012');
  assert.equal(shortId(12), '12');
  assert.equal(shortId(null), '');
});
