// The page's timings are bounded: a page open all day keeps at most MAX.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX, measure } from '../../ui/js/perf.js';

test('the page keeps at most MAX of its measures, and the newest', () => {
  const start = performance.now();
  for (let i = 0; i < MAX * 2 + 5; i += 1) measure(i % 2 ? 'aep:test-a' : 'aep:test-b', start, { i });
  const kept = [...performance.getEntriesByName('aep:test-a'), ...performance.getEntriesByName('aep:test-b')];
  assert.ok(kept.length > 0 && kept.length <= MAX, `${kept.length} measures kept`);
  assert.ok(kept.some((e) => e.detail.i === MAX * 2 + 4), 'the newest is kept');
  assert.ok(kept.every((e) => e.startTime === start));
});
