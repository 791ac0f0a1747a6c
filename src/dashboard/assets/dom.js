/**
 * What the dashboard's page modules share: building elements (attributes set, text never parsed as
 * HTML) and showing times in local time.
 */

/** An element with `attrs` (null/undefined skipped) and `children` (nodes, or text). */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

export const pad = (n) => String(n).padStart(2, '0');

/** A time in local time, `2026-03-02 12:05:09`. */
export function localText(iso) {
  const d = new Date(iso);
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return `${day} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A time as a <time> (ISO in `datetime`, local text), or a dash. */
export function when(iso) {
  if (!iso) return el('span', { class: 'muted' }, '—');
  return el('time', { datetime: iso, title: iso }, localText(iso));
}
