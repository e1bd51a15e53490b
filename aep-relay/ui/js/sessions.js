// Which sessions the fleet table shows, and in what order: filters by
// agent, state and text, ended sessions folded away unless asked for, and
// the orders a person picks. Pure (no DOM): views/fleet.js draws it.

/** The orders a person can pick, with their words. The default keeps
 * rows where they are (newest first, in the order sessions appeared), so
 * a row never moves under a pointer; the others are chosen on purpose. */
export const ORDERS = {
  appeared: 'Newest first',
  activity: 'Last activity',
  pending: 'Most waiting',
  name: 'Session id',
};

/** A filter that shows every session that has not ended. */
export function defaults() {
  return { agent: '', state: '', text: '', showEnded: false, order: 'appeared' };
}

function lastOf(s) {
  const t = typeof s.last === 'number' ? s.last : Date.parse(s.last ?? '');
  return Number.isFinite(t) ? t : -Infinity;
}

/**
 * `sessions` in the order they appeared (oldest first); `stateOf(s)` is
 * `running`, `waiting` or `ended`. Returns the rows to show, how many
 * ended sessions the fold hides, and the agents seen (sorted).
 */
export function arrange(sessions, filter, stateOf) {
  const agents = [...new Set(sessions.map((s) => s.agent).filter((a) => typeof a === 'string' && a !== ''))].sort();
  const needle = (filter.text ?? '').trim().toLowerCase();
  let endedHidden = 0;
  const rows = [];
  sessions.forEach((s, index) => {
    const state = stateOf(s);
    if (filter.agent && s.agent !== filter.agent) return;
    if (filter.state && state !== filter.state) return;
    if (needle) {
      const hay = `${s.session ?? ''}\n${s.source ?? ''}\n${s.agent ?? ''}\n${s.label ?? ''}`.toLowerCase();
      if (!hay.includes(needle)) return;
    }
    // Asking for ended sessions by state shows them: the fold is for the
    // unfiltered list.
    if (state === 'ended' && !filter.showEnded && filter.state !== 'ended') {
      endedHidden += 1;
      return;
    }
    rows.push({ s, state, index });
  });
  const byAppeared = (a, b) => b.index - a.index;
  const order = {
    appeared: byAppeared,
    activity: (a, b) => lastOf(b.s) - lastOf(a.s) || byAppeared(a, b),
    pending: (a, b) => (b.s.pending?.length ?? 0) - (a.s.pending?.length ?? 0) || byAppeared(a, b),
    name: (a, b) => String(a.s.session).localeCompare(String(b.s.session)) || byAppeared(a, b),
  }[filter.order] ?? byAppeared;
  rows.sort(order);
  return { rows: rows.map((r) => r.s), endedHidden, agents };
}
