// Work spread over frames: a batch drawn under a budget, on a fake clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FRAME_BUDGET_MS, within } from '../../ui/js/pace.js';

/** A clock that moves only when a step says it took time. */
function fakeClock() {
  let t = 0;
  return { now: () => t, spend: (ms) => (t += ms) };
}

/** Items handed to `handle` one step at a time, each taking `cost(item)`
 * ms of the fake clock; frames run until the queue is empty. */
function drain(items, budgetMs, cost) {
  const clock = fakeClock();
  const handled = [];
  const frames = [];
  let next = 0;
  const step = () => {
    if (next >= items.length) return false;
    const item = items[next];
    next += 1;
    clock.spend(cost(item));
    handled.push(item);
    return next < items.length;
  };
  for (let left = true; left; ) {
    const start = clock.now();
    const before = handled.length;
    left = within(budgetMs, clock.now, step);
    frames.push({ items: handled.slice(before), ms: clock.now() - start });
    assert.ok(frames.length <= items.length + 1, 'a frame did no work');
  }
  return { handled, frames };
}

test('a batch is handled in order, each item once, over several frames', () => {
  const items = Array.from({ length: 100 }, (_, i) => `e${i}`);
  const { handled, frames } = drain(items, 8, () => 0.5);
  assert.deepEqual(handled, items);
  assert.equal(frames.length, Math.ceil(100 / 16));
  assert.ok(frames.every((f) => f.items.length > 0));
});

test('no step starts once the budget is spent', () => {
  const items = Array.from({ length: 50 }, (_, i) => i);
  // Uneven costs: 0.3 to 2.9 ms.
  const { handled, frames } = drain(items, 8, (i) => 0.3 + (i % 7) * 0.433);
  assert.deepEqual(handled, items);
  for (const f of frames) {
    const last = f.items.length - 1;
    // Only the step running when the budget ran out can overshoot it: the
    // frame without its last step stayed under the budget.
    const before = f.items.slice(0, last).reduce((ms, i) => ms + 0.3 + (i % 7) * 0.433, 0);
    assert.ok(before < 8, `a step started after ${before} ms`);
    assert.ok(f.ms < 8 + 3, `a frame took ${f.ms} ms`);
  }
  assert.ok(frames.length > 1);
});

test('a step slower than the budget still moves the work on, one a frame', () => {
  const { handled, frames } = drain(['a', 'b', 'c'], 8, () => 20);
  assert.deepEqual(handled, ['a', 'b', 'c']);
  assert.deepEqual(frames.map((f) => f.items), [['a'], ['b'], ['c']]);
});

test('a small batch takes one frame and says nothing is left', () => {
  const { handled, frames } = drain([1, 2, 3], FRAME_BUDGET_MS, () => 1);
  assert.deepEqual(handled, [1, 2, 3]);
  assert.equal(frames.length, 1);
});

test('with nothing to do, one call does nothing and says so', () => {
  let calls = 0;
  const left = within(8, () => 0, () => {
    calls += 1;
    return false;
  });
  assert.equal(left, false);
  assert.equal(calls, 1);
});

test('work added between frames is taken in its turn', () => {
  const clock = fakeClock();
  const queue = ['a', 'b', 'c', 'd'];
  let next = 0;
  const seen = [];
  const step = () => {
    if (next >= queue.length) return false;
    seen.push(queue[next]);
    next += 1;
    clock.spend(5);
    return next < queue.length;
  };
  assert.equal(within(8, clock.now, step), true);
  assert.deepEqual(seen, ['a', 'b']);
  queue.push('e');
  while (within(8, clock.now, step));
  assert.deepEqual(seen, ['a', 'b', 'c', 'd', 'e']);
});
