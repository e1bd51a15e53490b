// The page's plain-words status: empty states that name their cause,
// and what the relay's discovery document says about routing answers.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyText, linkOf, routedOf } from '../../ui/js/status.js';

test('the link state follows the stream, and a refused token is told apart from none', () => {
  assert.equal(linkOf('live', true), 'live');
  assert.equal(linkOf('unauthorized', false), 'no-token');
  assert.equal(linkOf('unauthorized', true), 'wrong-token');
  assert.equal(linkOf('reconnecting', true), 'unreachable');
  assert.equal(linkOf('error', false), 'unreachable');
  assert.equal(linkOf('connecting', false), 'connecting');
});

test('the empty states say the real cause', () => {
  for (const what of ['sessions', 'inbox']) {
    assert.match(emptyText('no-token', what), /no token given/);
    assert.match(emptyText('wrong-token', what), /wrong token/);
    assert.match(emptyText('unreachable', what), /cannot be reached/);
    assert.match(emptyText('connecting', what), /connecting/);
    for (const link of ['no-token', 'wrong-token', 'unreachable', 'connecting']) {
      assert.doesNotMatch(emptyText(link, what), /No sessions yet|Nothing is waiting/);
    }
  }
  assert.match(emptyText('live', 'sessions'), /^No sessions yet/);
  assert.equal(emptyText('live', 'inbox'), 'Nothing is waiting on a person.');
});

test('whether the relay routes answers is read from its discovery document only', () => {
  assert.equal(routedOf({ control: { routed: false } }), false);
  assert.equal(routedOf({ control: { routed: true } }), true);
  assert.equal(routedOf({ control: { routed: 'yes' } }), null);
  assert.equal(routedOf({ capabilities: { control: { accepts: [] } } }), null);
  assert.equal(routedOf(null), null);
});
