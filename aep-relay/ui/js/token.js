// Where the page's token comes from and where it stays: the URL fragment
// (`#token=...`, never sent to a server), then sessionStorage for this
// tab only. The fragment is dropped from the address bar at once.

const KEY = 'aep-relay-token';

/**
 * Splits a URL fragment into the token it carries (`token=` among
 * `&`-separated parts) and the fragment without it. A token that is not
 * valid percent-encoding is refused (`token: null`, `bad: true`). A
 * token written as a query in the fragment (`#/?token=...`,
 * `#/session/x?access_token=...`) is taken the same way, so no token a
 * person pasted stays in the address bar.
 */
export function takeToken(hash) {
  const parts = String(hash || '').replace(/^#/, '').split(/[&?]/).filter((p) => p !== '');
  let token = null;
  let bad = false;
  const rest = [];
  for (const part of parts) {
    const name = /^(?:access_)?token=/.exec(part);
    if (name) {
      try {
        const value = decodeURIComponent(part.slice(name[0].length));
        if (value !== '') token = value;
      } catch {
        bad = true;
      }
    } else rest.push(part);
  }
  return { token, bad, hash: rest.length ? `#${rest.join('&')}` : '' };
}

/** Takes a token out of the address bar's fragment, if one is there
 * (at load, and when a token URL is pasted into an open tab): the
 * fragment is rewritten without it at once. Returns `{found, token,
 * bad}`. */
export function stripToken() {
  const found = window.location.hash.includes('token=');
  const { token, bad, hash } = takeToken(window.location.hash);
  if (found) {
    const clean = window.location.pathname + window.location.search + hash;
    window.history.replaceState(null, '', clean);
  }
  return { found, token, bad };
}

/** The token for this tab: from the fragment (then stored and removed
 * from the address bar), else from sessionStorage, else null. */
export function loadToken() {
  const { token } = stripToken();
  if (token) {
    saveToken(token);
    return token;
  }
  try {
    return window.sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

/** Keeps `token` for this tab (null forgets it). */
export function saveToken(token) {
  try {
    if (token) window.sessionStorage.setItem(KEY, token);
    else window.sessionStorage.removeItem(KEY);
  } catch {
    // Storage refused (a private mode): the token lives in memory only.
  }
}
