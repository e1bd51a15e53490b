// Building DOM nodes from data without ever parsing HTML: every string
// becomes a text node or an attribute value, so event text cannot turn
// into markup.

/**
 * Creates an element. `attrs` keys: `class`, `text` (textContent), `on`
 * ({event: handler}), properties that must be set as such (`checked`,
 * `value`, `disabled`, `hidden`), and anything else as an attribute
 * (`null`/`undefined`/`false` skip it). Children are nodes or strings
 * (as text); `null` children are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = String(value);
    else if (key === 'on') {
      for (const [event, handler] of Object.entries(value)) el.addEventListener(event, handler);
    } else if (key === 'checked' || key === 'value' || key === 'disabled' || key === 'hidden') {
      el[key] = value;
    } else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces every child of `el` with `children`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

let serial = 0;
/** A fresh id for `for`/`aria-describedby` links. */
export function uid(prefix) {
  serial += 1;
  return `${prefix}-${serial}`;
}

/**
 * Makes `parent`'s children exactly `nodes`, in order, moving only what
 * is out of place: a node that stays keeps its focus and what was typed.
 */
export function reconcile(parent, nodes) {
  nodes.forEach((node, i) => {
    if (parent.children[i] !== node) parent.insertBefore(node, parent.children[i] || null);
  });
  while (parent.children.length > nodes.length) parent.lastElementChild.remove();
}

/**
 * An id shown short (`short`), whole in its tooltip, copied whole on a
 * click; `announce` says it was (or that it could not be).
 */
export function idChip(id, short, announce) {
  return h('button', {
    type: 'button',
    class: 'id-chip',
    title: `${id} (click to copy)`,
    'aria-label': `Copy id ${id}`,
    'data-id': id,
    text: short,
    on: {
      click: (e) => {
        e.preventDefault();
        e.stopPropagation();
        const done = () => announce(`Copied ${id}.`);
        const failed = () => announce(`Could not copy; the id is ${id}.`);
        if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(id).then(done, failed);
        else failed();
      },
    },
  });
}
