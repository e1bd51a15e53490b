// Windowing: the rows drawn near the view of a long list, on a fake list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MARGIN_ROWS, ROW_GUESS_PX, guess, moveBy, offsets, rowAt, rowWindow } from '../../ui/js/window.js';

/** A fake list of `n` rows, each `height(i)` px tall. */
function list(n, height) {
  return Array.from({ length: n }, (_, i) => height(i));
}

/** The rows a view from `top` of `view` px meets, by walking the list. */
function met(heights, top, view) {
  const rows = [];
  let y = 0;
  heights.forEach((h, i) => {
    if (y + h > top && y < top + view) rows.push(i);
    y += h;
  });
  return rows;
}

test('unmeasured rows count as the mean of the measured ones, or a guess', () => {
  assert.equal(guess([]), ROW_GUESS_PX);
  assert.equal(guess([undefined, undefined]), ROW_GUESS_PX);
  assert.equal(guess([20, undefined, 40]), 30);
  assert.deepEqual(offsets([10, undefined, 30], 5), [0, 10, 15, 45]);
  assert.deepEqual(offsets([]), [0]);
});

test('the row at a height is found by halves, clamped to the list', () => {
  const offs = offsets([10, 20, 30]);
  assert.equal(rowAt(offs, -5), 0);
  assert.equal(rowAt(offs, 0), 0);
  assert.equal(rowAt(offs, 9.5), 0);
  assert.equal(rowAt(offs, 10), 1);
  assert.equal(rowAt(offs, 29), 1);
  assert.equal(rowAt(offs, 30), 2);
  assert.equal(rowAt(offs, 1e9), 2);
  assert.equal(rowAt([0], 10), 0);
});

test('of 2 000 rows, those the view meets and a margin are drawn, the padding stands for the rest', () => {
  const heights = list(2000, (i) => (i % 7 === 0 ? 90 : 30));
  const offs = offsets(heights);
  const total = offs[2000];
  const view = 600;
  for (const top of [0, 1, 29, 30, 4567, 31_000, total / 2, total - view - 1, total - view, total + 500]) {
    const w = rowWindow(offs, top, view);
    assert.equal(w.total, total);
    assert.equal(w.before + (offs[w.end] - offs[w.start]) + w.after, total, `the list keeps its height at ${top}`);
    assert.equal(w.before, offs[w.start]);
    const from = Math.max(0, Math.min(top, total - view));
    for (const i of met(heights, from, view)) assert.ok(i >= w.start && i < w.end, `row ${i} met at ${top} but not drawn`);
    const seen = met(heights, from, view).length;
    assert.ok(w.end - w.start <= seen + 2 * MARGIN_ROWS, `${w.end - w.start} rows drawn at ${top}`);
    assert.ok(w.start === 0 || w.start === met(heights, from, view)[0] - MARGIN_ROWS);
  }
  // The top shows the oldest row; the end the newest.
  assert.equal(rowWindow(offs, 0, view).start, 0);
  assert.equal(rowWindow(offs, total - view, view).end, 2000);
  assert.ok(rowWindow(offs, total - view, view).start > 1900);
});

test('a list shorter than the view is drawn whole, an empty one not at all', () => {
  const offs = offsets(list(5, () => 30));
  assert.deepEqual(rowWindow(offs, 0, 600), { start: 0, end: 5, before: 0, after: 0, total: 150, pin: null });
  assert.deepEqual(rowWindow(offs, 400, 600), { start: 0, end: 5, before: 0, after: 0, total: 150, pin: null });
  assert.deepEqual(rowWindow([0], 0, 600), { start: 0, end: 0, before: 0, after: 0, total: 0, pin: null });
});

test('rows measured after they are drawn move the padding, not the rows drawn', () => {
  // Drawn at first with every row a guess; an expanded row turns out tall.
  const measured = new Array(1000).fill(undefined);
  const first = rowWindow(offsets(measured), 15_000, 500, 10);
  for (let i = first.start; i < first.end; i += 1) measured[i] = i === first.start + 12 ? 300 : 30;
  const offs = offsets(measured);
  const again = rowWindow(offs, offs[first.start + 10], 500, 10);
  assert.equal(again.before + (offs[again.end] - offs[again.start]) + again.after, offs[1000]);
  assert.ok(again.start <= first.start + 12 && again.end > first.start + 12, 'the tall row stays drawn');
  // The rows not drawn count as the mean of those measured.
  const drawn = first.end - first.start;
  const mean = (30 * (drawn - 1) + 300) / drawn;
  assert.equal(guess(measured), mean);
  assert.ok(Math.abs(offs[1000] - (30 * (drawn - 1) + 300 + (1000 - drawn) * mean)) < 1e-6);
});

test('a pinned row (the one with the focus) is drawn wherever the view is, the list keeping its height', () => {
  const heights = list(2000, (i) => (i % 7 === 0 ? 90 : 30));
  const offs = offsets(heights);
  const total = offs[2000];
  const view = 600;
  for (const pinned of [0, 5, 999, 1500, 1999]) {
    for (const top of [0, 4567, total / 2, total - view]) {
      const w = rowWindow(offs, top, view, MARGIN_ROWS, pinned);
      const plain = rowWindow(offs, top, view);
      // The rows near the view are the same with or without a pin.
      assert.equal(w.start, plain.start);
      assert.equal(w.end, plain.end);
      const inside = pinned >= w.start && pinned < w.end;
      assert.equal(w.pin === null, inside, `row ${pinned} at ${top}`);
      let drawn = w.before + (offs[w.end] - offs[w.start]) + w.after;
      if (w.pin) {
        assert.equal(w.pin.index, pinned);
        assert.ok(w.pin.gap >= 0);
        drawn += w.pin.gap + heights[pinned];
        if (pinned < w.start) {
          assert.equal(w.before, offs[pinned], 'the pinned row stands where it is, above');
          assert.equal(w.after, plain.after);
        } else {
          assert.equal(w.after, total - offs[pinned + 1], 'the pinned row stands where it is, below');
          assert.equal(w.before, plain.before);
        }
      }
      assert.equal(drawn, total, `the list keeps its height with row ${pinned} pinned at ${top}`);
    }
  }
  // A row next to the window: no gap. No pin, or one out of the list: none.
  const near = rowWindow(offs, 0, view, 10, rowWindow(offs, 0, view, 10).end);
  assert.equal(near.pin.gap, 0);
  assert.equal(rowWindow(offs, 0, view, 10, -1).pin, null);
  assert.equal(rowWindow(offs, 0, view, 10, 2000).pin, null);
  assert.equal(rowWindow([0], 0, view, 10, 0).pin, null);
});

test("keys move the keyboard's place by a row, a page, or to either end, clamped", () => {
  assert.equal(moveBy('ArrowDown', 4, 2000), 5);
  assert.equal(moveBy('j', 4, 2000), 5);
  assert.equal(moveBy('ArrowUp', 4, 2000), 3);
  assert.equal(moveBy('k', 0, 2000), 0);
  assert.equal(moveBy('End', 4, 2000), 1999);
  assert.equal(moveBy('Home', 1999, 2000), 0);
  assert.equal(moveBy('PageDown', 1990, 2000, 20), 1999);
  assert.equal(moveBy('PageUp', 30, 2000, 20), 10);
  assert.equal(moveBy('PageDown', 30, 2000, 0), 31);
  // From no row: down starts at the first, up at the last.
  assert.equal(moveBy('ArrowDown', -1, 10), 0);
  assert.equal(moveBy('ArrowUp', -1, 10), 9);
  assert.equal(moveBy('x', 3, 10), null);
  assert.equal(moveBy('ArrowDown', 0, 0), null);
});
