// Telling a person a request arrived: a polite live region (always), the
// pending count in the tab's title, and a browser notification once the
// person allowed them (the browser asks only after a click).

const BASE_TITLE = document.title;

/** The title with the pending count: "(2) AEP relay". */
export function badge(count) {
  document.title = count > 0 ? `(${count}) ${BASE_TITLE}` : BASE_TITLE;
}

/** Says `text` through the live region. */
export function announce(region, text) {
  // A fresh node is announced even when the text repeats.
  region.replaceChildren(document.createTextNode(text));
}

/** Wires the "Enable notifications" button; hides it where notifications
 * do not exist or were already decided. */
export function setupNotifications(button, say) {
  if (!('Notification' in window)) {
    button.hidden = true;
    return;
  }
  const show = () => {
    button.hidden = Notification.permission !== 'default';
  };
  show();
  button.addEventListener('click', async () => {
    const answer = await Notification.requestPermission();
    show();
    say(answer === 'granted' ? 'Notifications are on for new requests.' : 'Notifications stay off.');
  });
}

/** A browser notification, when allowed. */
export function notify(title, body, tag) {
  if (!('Notification' in window) || Notification.permission !== 'granted') return;
  try {
    new Notification(title, { body, tag });
  } catch {
    // Some browsers allow notifications only from a service worker.
  }
}
