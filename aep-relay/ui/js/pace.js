// Work spread over animation frames under a time budget, so a large batch
// of events never holds one frame: a frame does what fits in its budget
// and the rest waits for the next frame. Pure: the clock is passed in.

/** The time a frame spends placing timeline rows, in ms: well under the
 * 16 ms of a 60 Hz frame, leaving room for the fold, layout and paint. */
export const FRAME_BUDGET_MS = 8;

/**
 * Calls `step()` again and again until it returns false or `budgetMs` have
 * passed on `now()` since the call. `step` does the next piece of work
 * (nothing when there is none) and returns whether any is left after it.
 * Returns whether work is left for a later call.
 *
 * Invariant: steps run one after another in the caller's order, none is
 * skipped or repeated (the caller's cursor moves only in `step`); at least
 * one step runs on each call, so work always moves on however slow a step
 * is; no step starts once the budget is spent (only the step running when
 * it runs out can overshoot it).
 */
export function within(budgetMs, now, step) {
  const start = now();
  for (;;) {
    if (!step()) return false;
    if (now() - start >= budgetMs) return true;
  }
}
