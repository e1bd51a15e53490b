// The SSE parser, resume positions, the token fragment, summaries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseParser, parseEventId, parseExhausted, resumeFrom } from '../../ui/js/sse.js';
import { takeToken } from '../../ui/js/token.js';
import { ago, captureNote, summarize } from '../../ui/js/summary.js';

test('SSE messages and comments, whatever the chunking', () => {
  const text = ': ping\n\nevent: run.started\ndata: {"a":1}\nid: s:0:3\n\r\nevent: x\r\ndata: a\r\ndata: b\r\r: replay-exhausted s 0:5\n\n';
  const whole = new SseParser().push(text);
  for (let size = 1; size < 8; size += 1) {
    const p = new SseParser();
    const out = [];
    for (let i = 0; i < text.length; i += size) out.push(...p.push(text.slice(i, i + size)));
    assert.deepEqual(out, whole, `chunks of ${size}`);
  }
  assert.deepEqual(whole, [
    { kind: 'comment', text: 'ping' },
    { kind: 'message', event: 'run.started', data: '{"a":1}', id: 's:0:3' },
    { kind: 'message', event: 'x', data: 'a\nb', id: null },
    { kind: 'comment', text: 'replay-exhausted s 0:5' },
  ]);
});

test('event ids are read as the pattern session:epoch:seq reads them', () => {
  // The reading the page had, a regular expression, against the one it
  // has now, on random texts of the characters that matter.
  const byPattern = (id) => {
    const m = /^(.*):(\d+):(\d+)$/s.exec(String(id ?? ''));
    if (!m || m[1] === '') return null;
    return { session: m[1], epoch: Number(m[2]), seq: Number(m[3]) };
  };
  const alphabet = [':', '0', '7', '9', 'a', ' ', '\n', '٣', '-', '+', '.', 'e'];
  let seed = 7;
  const rand = (n) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  for (let i = 0; i < 20000; i += 1) {
    let id = '';
    for (let len = rand(12); len > 0; len -= 1) id += alphabet[rand(alphabet.length)];
    assert.deepEqual(parseEventId(id), byPattern(id), JSON.stringify(id));
  }
  for (const id of [null, undefined, '', ':', '::', 's::1', 's:1:', 's:1:2', 'a:b:2:10', 's:01:002', ':1:2', 's:1:2\n', 'x:99999999999999999999:1']) {
    assert.deepEqual(parseEventId(id), byPattern(id), JSON.stringify(id));
  }
});

test('event ids are read from the right; resume lists every session', () => {
  assert.deepEqual(parseEventId('a:b:2:10'), { session: 'a:b', epoch: 2, seq: 10 });
  assert.equal(parseEventId('nope'), null);
  assert.equal(parseEventId(':1:2'), null);
  const positions = new Map([['s2', { epoch: 0, seq: 4 }], ['s1', { epoch: 1, seq: 0 }]]);
  assert.deepEqual(JSON.parse(resumeFrom(positions)), [{ session: 's1', epoch: 1, seq: 0 }, { session: 's2', epoch: 0, seq: 4 }]);
  assert.equal(resumeFrom(new Map()), 'all');
  assert.equal(resumeFrom(positions, 1), 'all');
  assert.deepEqual(parseExhausted('replay-exhausted "a b" 0:7'), { session: 'a b', epoch: 0, seq: 7 });
  assert.equal(parseExhausted('shutting-down'), null);
});

test('the token comes from the fragment and leaves it', () => {
  assert.deepEqual(takeToken('#token=a%20b'), { token: 'a b', bad: false, hash: '' });
  assert.deepEqual(takeToken('#/session/x&token=t'), { token: 't', bad: false, hash: '#/session/x' });
  assert.deepEqual(takeToken('#token=%E0%A4%A'), { token: null, bad: true, hash: '' });
  assert.deepEqual(takeToken(''), { token: null, bad: false, hash: '' });
  // A token pasted as a query inside the fragment is taken and stripped
  // too: it must not stay in the address bar (nor in the route).
  assert.deepEqual(takeToken('#?token=t'), { token: 't', bad: false, hash: '' });
  assert.deepEqual(takeToken('#/?token=t'), { token: 't', bad: false, hash: '#/' });
  assert.deepEqual(takeToken('#/session/x?token=t'), { token: 't', bad: false, hash: '#/session/x' });
  assert.deepEqual(takeToken('#access_token=t'), { token: 't', bad: false, hash: '' });
});

test('one-line summaries and capture notes', () => {
  assert.equal(summarize({ type: 'attention.requested', data: { kind: 'form', prompt: 'How?\nReally' } }), 'form · How? Really');
  assert.equal(summarize({ type: 'attention.answered', data: { answer: { values: { a: 1, b: ['x', 'y'] } } } }), 'a=1, b=x+y');
  assert.equal(summarize({ type: 'control.rejected', data: { reason: 'invalid', detail: 'no' } }), 'invalid · no');
  assert.equal(summarize({ type: 'x.v.thing', data: { k: '<b>' } }), '{"k":"<b>"}');
  assert.ok(summarize({ type: 'x', data: { k: 'y'.repeat(500) } }).length <= 160);
  assert.match(captureNote({}), /placeholders, not the agent’s words/, 'capture defaults to metadata');
  assert.match(captureNote({ capture: 'metadata' }), /placeholders/);
  assert.equal(captureNote({ capture: 'redacted' }), 'Text was redacted by the agent before it was sent.');
  for (const capture of ['none', 'metadata', 'redacted']) {
    assert.doesNotMatch(captureNote({ capture }), /Captured at|pipeline|structural/, 'plain words');
  }
  assert.equal(captureNote({ capture: 'full' }), null);
  assert.equal(ago(0, 59_000), '59 s');
  assert.equal(ago(0, 3_600_000 * 2 + 60_000), '2 h 1 min');
});
