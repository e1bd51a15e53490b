// The reading side with a stand-in relay: what it delivers, and that a
// stopped stream delivers nothing more.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventStream } from '../../ui/js/stream.js';

const ev = (session, seq) => `id: ${session}:0:${seq}\ndata: ${JSON.stringify({ id: `${session}-${seq}`, session })}\n\n`;

/** A body the test writes into; it errors when `signal` aborts, as a
 * fetch body does. */
function body(signal) {
  let ctl;
  const stream = new ReadableStream({ start: (c) => { ctl = c; } });
  const enc = new TextEncoder();
  signal?.addEventListener('abort', () => ctl.error(new DOMException('aborted', 'AbortError')));
  return { stream, write: (text) => ctl.enqueue(enc.encode(text)), close: () => ctl.close() };
}

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

test('a stopped stream delivers nothing more, its history reads included', async () => {
  const bodies = [];
  const saved = globalThis.fetch;
  globalThis.fetch = async (url, options = {}) => {
    const b = body(options.signal);
    bodies.push({ url: String(url), ...b });
    return new Response(b.stream, { status: 200 });
  };
  try {
    const events = [];
    const notices = [];
    const s = new EventStream('t', { event: (t) => events.push(JSON.parse(t).id), state: () => {}, notice: (t) => notices.push(t) });
    s.start();
    await tick();
    // The first stream (from every session) delivers a, then ends.
    bodies[0].write(ev('a', 1));
    await tick();
    bodies[0].close();
    // Reconnected (resumed) after the backoff.
    for (let i = 0; i < 200 && bodies.length < 2; i += 1) await tick(10);
    assert.equal(bodies.length, 2, 'resumed');
    assert.match(bodies[1].url, /from=%5B/);
    // A session first seen on the resumed stream: its history is read.
    bodies[1].write(ev('b', 5));
    await tick();
    assert.equal(bodies.length, 3, 'a history read');
    assert.match(bodies[2].url, /live=0/);
    bodies[2].write(ev('b', 1));
    await tick();
    assert.deepEqual(events, ['a-1', 'b-1']);
    s.stop();
    await tick();
    // What the relay still sends after the stop reaches nobody.
    try { bodies[2].write(ev('b', 2)); bodies[2].close(); } catch { /* aborted */ }
    await tick(20);
    assert.deepEqual(events, ['a-1', 'b-1'], 'nothing delivered after stop()');
    assert.deepEqual(notices, [], 'no notice from a stopped stream');
  } finally {
    globalThis.fetch = saved;
  }
});

test('a chunk of many events is taken in with pauses, and none after stop()', async () => {
  const bodies = [];
  const saved = globalThis.fetch;
  globalThis.fetch = async (url, options = {}) => {
    const b = body(options.signal);
    bodies.push({ url: String(url), ...b });
    return new Response(b.stream, { status: 200 });
  };
  try {
    const events = [];
    let other = false;
    let otherAt = null;
    const s = new EventStream('t', {
      event: (t) => {
        events.push(JSON.parse(t).id);
        if (other && otherAt === null) otherAt = events.length;
        // Each event costs 20 ms of the thread.
        const until = performance.now() + 20;
        while (performance.now() < until);
        if (events.length === 8) setTimeout(() => s.stop(), 0);
      },
      state: () => {},
      notice: () => {},
    });
    s.start();
    await tick();
    // Twenty events in one chunk (a replay comes in chunks of thousands).
    let chunk = '';
    for (let i = 1; i <= 20; i += 1) chunk += ev('a', i);
    setTimeout(() => { other = true; }, 0);
    bodies[0].write(chunk);
    await tick(700);
    assert.ok(otherAt !== null && otherAt <= 5, `another task ran within the chunk (after event ${otherAt})`);
    assert.ok(events.length < 20, `stopped within the chunk: ${events.length} delivered`);
  } finally {
    globalThis.fetch = saved;
  }
});
