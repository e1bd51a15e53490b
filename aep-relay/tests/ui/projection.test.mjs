// The page's fold: the projection rules, checked event by event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Fleet, canonical, isCommand, key } from '../../ui/js/projection.js';

const SRC = 'urn:agent:a';
let n = 0;
function ev(type, extra = {}) {
  n += 1;
  return { aep: '0.1', id: `e${n}`, type, time: `2026-12-01T10:00:${String(n % 60).padStart(2, '0')}Z`, source: SRC, agent: 'a', session: 's', ...extra };
}
const line = (e) => JSON.stringify(e);

test('a redelivery is dropped; another event under the same (source, id) is a collision', () => {
  const f = new Fleet();
  const e = ev('session.started', { seq: 0 });
  assert.equal(f.ingest(line(e)).status, 'new');
  // Member order does not make a different event.
  const reordered = JSON.stringify(Object.fromEntries(Object.entries(e).reverse()));
  assert.equal(f.ingest(reordered).status, 'duplicate');
  assert.equal(f.ingest(line({ ...e, data: { label: 'other' } })).status, 'collision');
  assert.deepEqual(f.violations, [{ rule: 'id-collision', source: SRC, id: e.id }]);
  assert.equal(f.sessions.get(key(SRC, 's')).timeline.length, 1);
  // The same id from another source is another event.
  assert.equal(f.ingest(line({ ...e, source: 'urn:agent:b' })).status, 'new');
});

test('sessions are keyed by (source, session)', () => {
  const f = new Fleet();
  f.ingest(line(ev('session.started', { seq: 0 })));
  f.ingest(line(ev('session.started', { seq: 0, source: 'urn:agent:b' })));
  assert.equal(f.sessions.size, 2);
});

test('runs: first start wins, one terminal, a second is a violation', () => {
  const f = new Fleet();
  f.ingest(line(ev('run.started', { run: 'r', seq: 1 })));
  f.ingest(line(ev('run.finished', { run: 'r', seq: 2 })));
  f.ingest(line(ev('run.failed', { run: 'r', seq: 3 })));
  f.ingest(line(ev('run.cancelled', { run: 'q', seq: 4 })));
  const s = f.sessions.get(key(SRC, 's'));
  assert.equal(s.runs.get('r').status, 'finished');
  assert.equal(s.runs.get('q').status, 'cancelled');
  assert.equal(s.runs.get('q').started, null);
  assert.deepEqual(f.violations.map((v) => v.rule), ['run-terminal-exclusivity']);
});

test('pending attention: requested adds, answered keeps, resolved and timeout clear', () => {
  const f = new Fleet();
  const a = ev('attention.requested', { seq: 1, data: { kind: 'permission', prompt: 'ok?', respond_via: ['control'] } });
  const b = ev('attention.requested', { seq: 2, data: { kind: 'input', prompt: 'name?' } });
  f.ingest(line(a));
  f.ingest(line(b));
  const s = f.sessions.get(key(SRC, 's'));
  assert.equal(Fleet.state(s), 'waiting');
  assert.deepEqual(f.inbox().map((r) => r.id), [b.id, a.id], 'newest first');
  f.ingest(line(ev('attention.answered', { seq: 3, subject: a.id, data: { answer: { option: 'allow' } } })));
  assert.equal(s.pending.length, 2);
  assert.equal(f.requests.get(key(SRC, a.id)).answered.type, 'attention.answered');
  f.ingest(line(ev('attention.resolved', { seq: 4, subject: a.id, data: { resolution: 'answered' } })));
  f.ingest(line(ev('attention.timeout', { seq: 5, subject: b.id })));
  assert.equal(s.pending.length, 0);
  assert.equal(f.requests.get(key(SRC, a.id)).state, 'resolved');
  assert.equal(f.requests.get(key(SRC, b.id)).state, 'timeout');
  assert.equal(Fleet.state(s), 'running');
});

test('session end: pending requests and a second end are violations; the first end stays', () => {
  const f = new Fleet();
  f.ingest(line(ev('attention.requested', { seq: 1, data: { kind: 'input', prompt: 'x' } })));
  const end = ev('session.ended', { seq: 2 });
  f.ingest(line(end));
  f.ingest(line(ev('session.ended', { seq: 3 })));
  const s = f.sessions.get(key(SRC, 's'));
  assert.equal(s.ended, end.time);
  assert.equal(Fleet.state(s), 'ended');
  assert.deepEqual(f.violations, [
    { rule: 'ended-with-pending-attention', source: SRC, session: 's', pending: 1 },
    { rule: 'ended-with-pending-attention', source: SRC, session: 's', pending: 1 },
    { rule: 'session-terminal-exclusivity', source: SRC, session: 's' },
  ]);
});

test('positions only go forward: seq and epoch regressions are named', () => {
  const f = new Fleet();
  f.ingest(line(ev('progress.status', { seq: 5, epoch: 1 })));
  const same = ev('progress.status', { seq: 5, epoch: 1 });
  f.ingest(line(same));
  const back = ev('progress.status', { seq: 9, epoch: 0 });
  f.ingest(line(back));
  f.ingest(line(ev('progress.status', { seq: 0, epoch: 2 })));
  assert.deepEqual(f.violations, [
    { rule: 'seq-regression', source: SRC, session: 's', id: same.id },
    { rule: 'epoch-regression', source: SRC, session: 's', id: back.id },
  ]);
});

test('commands fold no state but join their session timeline and link outcomes by cause', () => {
  const f = new Fleet();
  const cmd = { aep: '0.1', id: 'C1', type: 'control.attention.respond', time: '2026-12-01T10:00:00Z', source: 'aep://browser/agent/aep-ui', agent: 'aep-ui', session: 's', subject: 'q', cause: 'q', data: { answer: { option: 'allow' } } };
  // Before the session is known: kept, then attached.
  assert.equal(f.ingest(line(cmd)).status, 'new');
  assert.equal(f.sessions.size, 0);
  f.ingest(line(ev('session.started', { seq: 0 })));
  const ack = ev('control.accepted', { seq: 1, cause: 'C1' });
  f.ingest(line(ack));
  f.ingest(line(ev('attention.answered', { seq: 2, cause: 'C1', subject: 'q' })));
  f.ingest(line(ev('attention.resolved', { seq: 3, cause: ack.id, subject: 'q' })));
  const s = f.sessions.get(key(SRC, 's'));
  assert.equal(s.timeline[0].id, 'C1');
  assert.deepEqual(f.outcomes('C1').map((e) => e.type), ['control.accepted', 'attention.answered', 'attention.resolved']);
  assert.ok(isCommand('control.cancel') && isCommand('x.acme.control.reboot'));
  assert.ok(!isCommand('control.accepted') && !isCommand('x.acme.tool.requested'));
});

test('agent events and lines that are not events fold nothing; the unreadable are counted', () => {
  const f = new Fleet();
  assert.equal(f.ingest('{"aep":"0.1","id":"h","type":"agent.heartbeat","time":"t","source":"s","agent":"a"}').status, 'new');
  assert.equal(f.ingest('not json').status, 'invalid');
  assert.equal(f.ingest('[1]').status, 'invalid');
  assert.equal(f.ingest('{"id":"x"}').status, 'invalid');
  assert.equal(f.sessions.size, 0);
  assert.equal(f.unreadable, 3);
});

test('the timeline keeps a bounded number of events and counts the rest', () => {
  const f = new Fleet({ keep: 3 });
  for (let i = 0; i < 5; i += 1) f.ingest(line(ev('progress.status', { seq: i + 100 })));
  const s = f.sessions.get(key(SRC, 's'));
  assert.equal(s.timeline.length, 3);
  assert.equal(s.dropped, 2);
});

test('canonical JSON orders members at every depth', () => {
  assert.equal(canonical({ b: 1, a: { d: [1, { f: 1, e: 2 }], c: 'x' } }), '{"a":{"c":"x","d":[1,{"e":2,"f":1}]},"b":1}');
  assert.notEqual(key('a', 'b\u0000c'), key('a\u0000b', 'c'));
});

test('a session that ends takes its pending requests out of the inbox, into the closed list', () => {
  const f = new Fleet();
  const open = ev('attention.requested', { session: 'live', seq: 1, data: { kind: 'input', prompt: 'still asking' } });
  const left = ev('attention.requested', { seq: 1, data: { kind: 'input', prompt: 'left behind' } });
  f.ingest(line(open));
  f.ingest(line(left));
  assert.deepEqual(f.inbox().map((r) => r.id).sort(), [open.id, left.id].sort());
  assert.deepEqual(f.closedUnanswered(), []);
  f.ingest(line(ev('session.ended', { seq: 2 })));
  assert.deepEqual(f.inbox().map((r) => r.id), [open.id], 'only the live session waits');
  assert.deepEqual(f.closedUnanswered().map((r) => r.id), [left.id], 'kept findable');
  const closed = f.requests.get(key(SRC, left.id));
  assert.equal(closed.state, 'pending', 'never resolved: the projection does not invent a resolution');
  assert.notEqual(closed.sessionEnded, null);
  assert.equal(f.requests.get(key(SRC, open.id)).sessionEnded, null);
});
