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
 * Invariant: `before + (offs[end] - offs[start]) + after === total`, so
 * the list is as tall drawn in part as drawn whole; every row the view
 * meets is drawn; at most the view's rows and `2 * margin` are.
 */
export function rowWindow(offs, top, height, margin = MARGIN_ROWS) {
  const n = offs.length - 1;
  const total = offs[n];
  if (n <= 0) return { start: 0, end: 0, before: 0, after: 0, total };
  const from = Math.max(0, Math.min(top, total - height));
  const first = rowAt(offs, from);
  let last = rowAt(offs, from + Math.max(height, 0));
  if (offs[last] >= from + height && last > first) last -= 1;
  const start = Math.max(0, first - margin);
  const end = Math.min(n, last + 1 + margin);
  return { start, end, before: offs[start], after: total - offs[end], total };
}
