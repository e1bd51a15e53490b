// The rows of a long list drawn only near the view (windowing): the list
// keeps every row's model, the page holds the rows that meet the view and
// a margin above and below, and padding above and below stands for the
// rest, so the scroll bar and the scroll position behave as if every row
// were there. Rows may differ in height: a row drawn once is measured and
// keeps its height; the others count as the mean of those measured. Pure:
// numbers in, numbers out.

/** The height a row counts for before any row was measured, in px. */
export const ROW_GUESS_PX = 30;

/** The rows drawn beyond each edge of the view. */
export const MARGIN_ROWS = 30;

/** The height an unmeasured row counts for: the mean of the measured
 * ones (`heights` holds a number for each measured row, `undefined` for
 * the others), else `fallback`. */
export function guess(heights, fallback = ROW_GUESS_PX) {
  let sum = 0;
  let n = 0;
  for (const h of heights) {
    if (typeof h === 'number' && h > 0) {
      sum += h;
      n += 1;
    }
  }
  return n ? sum / n : fallback;
}

/** Where each row starts: `offsets[i]` is the top of row `i`,
 * `offsets[n]` the height of them all. */
export function offsets(heights, unmeasured = guess(heights)) {
  const out = new Array(heights.length + 1);
  out[0] = 0;
  for (let i = 0; i < heights.length; i += 1) {
    const h = heights[i];
    out[i + 1] = out[i] + (typeof h === 'number' && h > 0 ? h : unmeasured);
  }
  return out;
}

/** The row at height `y`: the first whose bottom is below `y`, clamped to
 * the rows there are (0 for an empty list). */
export function rowAt(offs, y) {
  const n = offs.length - 1;
  if (n <= 0) return 0;
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (offs[mid + 1] > y) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * The rows to draw for a view from `top` (px from the list's top) of
 * `height` px: those it meets and `margin` more on each side. Returns
 * `{ start, end }` (row `end` is the first not drawn), `before` and
 * `after` (the px the rows not drawn above and below stand for) and
 * `total`.
 *
 * `pinned` (an index, or -1 for none) is a row drawn wherever the view is
 * (the row that has the keyboard focus, so it never leaves the page):
 * when it falls outside `start..end`, `pin` is `{ index, gap }`, the row
 * drawn on its own above the others (`index < start`) or below them, and
 * `gap` the px of the rows between it and them; `before` (or `after`)
 * then stands for the rows beyond it. Else `pin` is null.
 *
 * Invariant: `before + (offs[end] - offs[start]) + after === total`, with
 * a pin's `gap` and own height added to the left side when there is one,
 * so the list is as tall drawn in part as drawn whole; every row the view
 * meets is drawn; at most the view's rows, `2 * margin` and the pinned
 * row are.
 */
export function rowWindow(offs, top, height, margin = MARGIN_ROWS, pinned = -1) {
  const n = offs.length - 1;
  const total = offs[n];
  if (n <= 0) return { start: 0, end: 0, before: 0, after: 0, total, pin: null };
  const from = Math.max(0, Math.min(top, total - height));
  const first = rowAt(offs, from);
  let last = rowAt(offs, from + Math.max(height, 0));
  if (offs[last] >= from + height && last > first) last -= 1;
  const start = Math.max(0, first - margin);
  const end = Math.min(n, last + 1 + margin);
  const w = { start, end, before: offs[start], after: total - offs[end], total, pin: null };
  if (!Number.isInteger(pinned) || pinned < 0 || pinned >= n || (pinned >= start && pinned < end)) return w;
  if (pinned < start) {
    w.pin = { index: pinned, gap: offs[start] - offs[pinned + 1] };
    w.before = offs[pinned];
  } else {
    w.pin = { index: pinned, gap: offs[pinned] - offs[end] };
    w.after = total - offs[pinned + 1];
  }
  return w;
}

/**
 * The row a key moves the keyboard's place to in a list of `n` rows, from
 * row `at` (-1 when none has it yet): ArrowDown/j and ArrowUp/k one row,
 * PageDown/PageUp `page` rows, Home and End the first and last. Returns
 * the row (clamped to the list), or null for a key that does not move.
 */
export function moveBy(key, at, n, page = 1) {
  if (n <= 0) return null;
  const step = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1, PageDown: Math.max(1, page), PageUp: -Math.max(1, page) }[key];
  if (key === 'Home') return 0;
  if (key === 'End') return n - 1;
  if (step === undefined) return null;
  if (at < 0 || at >= n) return step > 0 ? 0 : n - 1;
  return Math.min(n - 1, Math.max(0, at + step));
}
