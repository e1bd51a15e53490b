// What the page can say about its link to the relay, in plain words: the
// empty states (no sessions, nothing waiting) name the real cause, and
// the posture line says whether answering can work. Pure: strings in,
// strings out.

/**
 * The link states: `connecting`, `live`, `no-token` (the relay wants a
 * token and the page has none), `wrong-token` (the relay refused the
 * page's token), `unreachable` (the relay cannot be read right now).
 */
export const LINKS = ['connecting', 'live', 'no-token', 'wrong-token', 'unreachable'];

/** The link state from the event stream's state (see stream.js) and
 * whether the page held a token when it was refused. */
export function linkOf(streamState, hadToken) {
  switch (streamState) {
    case 'live':
      return 'live';
    case 'unauthorized':
      return hadToken ? 'wrong-token' : 'no-token';
    case 'reconnecting':
    case 'error':
      return 'unreachable';
    default:
      return 'connecting';
  }
}

/** The empty state of the session list (`what` = `sessions`) or of the
 * inbox (`inbox`), for the link state `link`. */
export function emptyText(link, what) {
  const nothing = what === 'inbox' ? 'Nothing to show here yet' : 'No sessions shown';
  switch (link) {
    case 'no-token':
      return `${nothing}: no token given. This relay shows its sessions only to a page with its token; use “Add token” above (or open the address \`aep relay --print-ui-url\` prints).`;
    case 'wrong-token':
      return `${nothing}: wrong token. The relay refused the token this page was given; enter the right one.`;
    case 'unreachable':
      return `${nothing}: the relay cannot be reached right now. The page keeps trying.`;
    case 'connecting':
      return `${nothing} yet: connecting to the relay…`;
    default:
      return what === 'inbox'
        ? 'Nothing is waiting on a person.'
        : 'No sessions yet. Start an agent (for example `aep demo`) against this relay.';
  }
}

/** Whether the relay routes commands, from its discovery document
 * (`control.routed`, a boolean); null when the document does not say. */
export function routedOf(discovery) {
  const control = discovery && typeof discovery === 'object' ? discovery.control : null;
  return control && typeof control.routed === 'boolean' ? control.routed : null;
}
