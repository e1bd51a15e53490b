// Answers as commands: ids, capture honesty, ack bookkeeping,
// reachability.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ACK_WINDOW_MS, SOURCE, Tracker, Ulids, ackWindow, answerCapture, reachability, respondCommand, retriable } from '../../ui/js/command.js';

const zeros = (n) => new Uint8Array(n);

test('ULIDs are 26 Crockford characters, time first, strictly increasing', () => {
  const ids = new Ulids(zeros);
  const a = ids.next(1_796_119_200_000);
  const b = ids.next(1_796_119_200_000);
  const c = ids.next(1_796_119_100_000); // the clock went back
  assert.match(a, /^[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.ok(a.startsWith('01M8RGR080'), a);
  assert.ok(a < b && b < c);
});

test('the command names the request, has no seq, and the page as sender', () => {
  const request = { id: 'REQ', session: 's', run: 'r1', seq: 7, type: 'attention.requested', source: 'urn:a' };
  const c = respondCommand(request, { option: 'allow' }, { id: 'CMD', nowMs: 0, capture: 'metadata' });
  assert.deepEqual(c, {
    aep: '0.1', id: 'CMD', type: 'control.attention.respond', time: '1970-01-01T00:00:00.000Z', source: SOURCE,
    agent: 'aep-ui', session: 's', subject: 'REQ', cause: 'REQ', capture: 'metadata', data: { answer: { option: 'allow' } }, run: 'r1',
  });
  assert.equal('seq' in c, false);
});

test('typed text goes at full, ids and numbers at metadata', () => {
  assert.equal(answerCapture({ option: 'allow' }, false), 'metadata');
  assert.equal(answerCapture({ text: 'hi' }, false), 'full');
  assert.equal(answerCapture({ values: { n: 1 } }, false), 'metadata');
  assert.equal(answerCapture({ values: { s: 'x' } }, true), 'full');
});

test('acks, relay refusals, timeouts and retries with the same bytes', () => {
  const t = new Tracker();
  t.send('A', 'line-A', 'k', 0);
  t.send('B', 'line-B', 'k', 0);
  t.send('C', 'line-C', 'k', 0);
  assert.equal(t.onEvent({ type: 'control.accepted', cause: 'A' }).state, 'accepted');
  const b = t.onEvent({ type: 'control.rejected', cause: 'B', data: { reason: 'refused', detail: 'no' } });
  assert.deepEqual([b.state, b.reason, b.detail], ['rejected', 'refused', 'no']);
  assert.equal(t.onEvent({ type: 'control.accepted', cause: 'B' }), null, 'one decision per command');
  assert.equal(t.onEvent({ type: 'attention.answered', cause: 'C' }), null);
  assert.deepEqual(t.expire(ACK_WINDOW_MS - 1), []);
  assert.deepEqual(t.expire(ACK_WINDOW_MS).map((c) => c.id), ['C']);
  assert.equal(t.sent.get('C').state, 'timeout');
  assert.equal(t.retry('A', 1), null, 'a settled command is not retried');
  assert.equal(t.retry('C', ACK_WINDOW_MS + 5), 'line-C');
  assert.equal(t.sent.get('C').tries, 2);
  const refused = t.onFrame({ type: 'error', cause: 'C', code: 'no-route', detail: 'gone' });
  assert.deepEqual([refused.state, refused.reason, refused.detail], ['refused', 'no-route', 'gone']);
  assert.equal(t.onFrame({ type: 'error', code: 'bad-json' }), null);
  // A late ack settles a timed-out command: the target decided.
  t.send('D', 'line-D', 'k', 0);
  t.expire(ACK_WINDOW_MS);
  assert.equal(t.onEvent({ type: 'control.accepted', cause: 'D' }).state, 'accepted');
});

test('a refusal for where a command went is retried as it is, one for what it says is not', () => {
  const t = new Tracker();
  t.send('N', 'line-N', 'k', 0);
  t.send('I', 'line-I', 'k', 0);
  t.onFrame({ type: 'error', cause: 'N', code: 'no-route', detail: 'no owner' });
  t.onFrame({ type: 'error', cause: 'I', code: 'invalid-event', detail: 'aep must be a string' });
  assert.equal(retriable(t.sent.get('N')), true);
  assert.equal(retriable(t.sent.get('I')), false);
  assert.equal(retriable({ state: 'refused', reason: 'bad-json' }), false);
  for (const reason of ['no-route', 'ambiguous', 'busy', 'limit-exceeded', 'not-connected']) {
    assert.equal(retriable({ state: 'refused', reason }), true, reason);
  }
  for (const reason of ['unauthorized', 'unsupported', 'invalid-event', 'x-something-new', '', null, undefined, 'constructor']) {
    assert.equal(retriable({ state: 'refused', reason }), false, String(reason));
  }
  assert.equal(retriable({ state: 'timeout', reason: 'timeout' }), true);
  assert.equal(retriable({ state: 'rejected', reason: 'refused' }), false, 'the agent decided');
  assert.equal(t.retry('I', 1), null, 'the same bytes would be refused again');
  assert.equal(t.retry('N', 1), 'line-N');
});

test('answerable only over control, with a token, a socket and one live owner that accepts', () => {
  const request = (via, state = 'pending') => ({ state, session: 's', event: { data: { respond_via: via } } });
  const owner = { session: 's', agent: 'a', control: { accepts: ['control.attention.respond'] } };
  const ctx = { token: 'T', socketReady: true, roster: [owner] };
  assert.deepEqual(reachability(request(['control']), ctx), { ok: true, why: null, ref: null });
  assert.match(reachability(request(['oob']), ctx).why, /only be answered in the agent’s own window/);
  assert.doesNotMatch(reachability(request(undefined), ctx).why, /respond_via|AEP-/, 'plain words');
  assert.match(reachability(request(undefined), ctx).ref, /no respond_via/, 'the rule, for a tooltip');
  const withoutToken = reachability(request(['control']), { ...ctx, token: null });
  assert.doesNotMatch(withoutToken.why, /AEP-0004/);
  assert.equal(withoutToken.ref, 'AEP-0004 §4.1');
  assert.match(reachability(request(['control']), { ...ctx, token: null }).why, /no token/);
  assert.match(reachability(request(['control']), { ...ctx, socketReady: false }).why, /Not connected to the relay/);
  assert.match(reachability(request(['control']), { ...ctx, roster: [] }).why, /no live owner/);
  assert.match(reachability(request(['control']), { ...ctx, roster: [owner, owner] }).why, /2 connections/);
  assert.match(reachability(request(['control']), { ...ctx, roster: [{ ...owner, control: { accepts: ['control.cancel'] } }] }).why, /does not take answers/);
  assert.equal(reachability(request(['control'], 'resolved'), ctx).ok, false);
});

test('a relay that routes no answers, or an ended session, means no answer controls, and says why', () => {
  const request = (extra = {}) => ({ state: 'pending', session: 's', sessionEnded: null, event: { data: { respond_via: ['control'] } }, ...extra });
  const owner = { session: 's', control: { accepts: ['control.attention.respond'] } };
  const ctx = { token: 'T', socketReady: true, roster: [owner] };
  assert.equal(reachability(request(), { ...ctx, routed: true }).ok, true);
  assert.equal(reachability(request(), { ...ctx, routed: null }).ok, true, 'unknown is not a refusal');
  const off = reachability(request(), { ...ctx, routed: false });
  assert.equal(off.ok, false);
  assert.match(off.why, /started without a token/);
  const ended = reachability(request({ sessionEnded: '2026-01-01T00:00:00Z' }), ctx);
  assert.equal(ended.ok, false);
  assert.match(ended.why, /Closed without an answer/);
});

test('the ack window is the owner\'s declared one, else 10 s', () => {
  const roster = [{ session: 's', control: { accepts: [], ack_window_ms: 3000 } }, { session: 'q', control: { ack_window_ms: 'soon' } }];
  assert.equal(ackWindow('s', roster), 3000);
  assert.equal(ackWindow('q', roster), null);
  assert.equal(ackWindow('none', roster), null);
  const t = new Tracker();
  t.send('A', 'a', 'k', 0, 3000);
  t.send('B', 'b', 'k', 0);
  assert.deepEqual(t.expire(3000).map((c) => c.id), ['A']);
  assert.match(t.sent.get('A').detail, /within 3 s/);
  assert.deepEqual(t.expire(ACK_WINDOW_MS).map((c) => c.id), ['B']);
  assert.match(t.sent.get('B').detail, /within 10 s/);
});
