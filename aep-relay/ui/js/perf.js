// The page's own timings, as performance measures named `aep:*` (see
// docs/ui.md, "How fast it is"): a browser keeps every measure a page
// makes, so a page left open all day would hold millions. Past `MAX`
// measures, the page's are cleared and counted again from none.

/** The most measures the page keeps. */
export const MAX = 10_000;

let count = 0;
const names = new Set();

/** Records the measure `name` from `start` (a `performance.now()` time)
 * to now, with `detail` if given. */
export function measure(name, start, detail) {
  if (count >= MAX) {
    for (const n of names) performance.clearMeasures(n);
    names.clear();
    count = 0;
  }
  count += 1;
  names.add(name);
  const options = { start, end: performance.now() };
  if (detail !== undefined) options.detail = detail;
  performance.measure(name, options);
}
