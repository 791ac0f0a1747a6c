/**
 * Jira wiki markup (the rich text of Data Center / Server's REST v2: comment bodies and
 * descriptions are plain strings in it) as plain text, for the same columns ADF fills on Cloud
 * (./adf.ts). The notation: https://jira.atlassian.com/secure/WikiRendererHelpAction.jspa
 * ("Text Formatting Notation Help"). What is kept is the visible text:
 *
 * - `{code}` / `{noformat}` blocks keep their content as written; `{quote}`, `{panel}` and `{color}`
 *   keep theirs; `h1.`–`h6.` and `bq.` lose their prefix; list markers (`*`, `#`, `-` runs) go;
 * - `*strong*`, `_emphasis_`, `-deleted-`, `+inserted+`, `^sup^`, `~sub~`, `??citation??` and
 *   `{{monospace}}` lose their marks; `[text|link]` gives the text, `[link]` the link, `[~user]`
 *   `@user`; `!image.png!` goes; table cells are separated by a tab; `\\` breaks a line; `\x`
 *   escapes `x`; `----` (a rule) goes.
 */

const CODE_BLOCK = /\{(code|noformat)(?::[^}]*)?\}([\s\S]*?)\{\1\}/g;
const PLACEHOLDER = '\u0000';

/** Plain text of a wiki-markup string (null for anything that is not a string). */
export function wikiToText(markup: unknown): string | null {
  if (typeof markup !== 'string') return null;
  // Code blocks are kept as written: set aside before the rest is read.
  const blocks: string[] = [];
  const text = markup.replace(/\r\n?/g, '\n').replace(CODE_BLOCK, (_m, _k, body: string) => {
    blocks.push(body.replace(/^\n+|\n+$/g, ''));
    return `\n${PLACEHOLDER}${blocks.length - 1}${PLACEHOLDER}\n`;
  });
  const lines = text.split('\n').map(line);
  return lines
    .join('\n')
    .replace(new RegExp(`${PLACEHOLDER}(\\d+)${PLACEHOLDER}`, 'g'), (_m, n: string) => blocks[Number(n)] ?? '')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** One line's text: block prefixes, then inline marks. */
function line(raw: string): string {
  if (/^\s*-{4,}\s*$/.test(raw)) return '';
  let s = raw
    .replace(/^\s*(h[1-6]|bq)\.\s+/, '')
    .replace(/^\s*[*#-]+\s+/, '')
    .replace(/\{(quote|panel|color)(?::[^}]*)?\}/g, '');
  if (/^\s*\|/.test(s)) s = cells(s);
  return inline(s);
}

/** `||a||b||` / `|a|b|` → `a\tb`. */
function cells(s: string): string {
  return s
    .trim()
    .replace(/^\|\|?|\|\|?$/g, '')
    .split(/\|\|?/)
    .map((c) => c.trim())
    .join('\t');
}

function inline(s: string): string {
  return s
    .replace(/\{\{([^}]*)\}\}/g, '$1')
    .replace(/!([^!\s|][^!|]*)(\|[^!]*)?!/g, '')
    .replace(/\[~([^\]]+)\]/g, '@$1')
    .replace(/\[([^\]|]*)\|([^\]]*)\]/g, (_m, label: string, link: string) => label || link)
    .replace(/\[([^\]|]+)\]/g, '$1')
    .replace(/(^|[^\w\\])([*_+^~-]|\?\?)(?=\S)(.+?)(?<=\S)\2(?!\w)/g, '$1$3')
    .replace(/\\\\/g, '\n')
    .replace(/\\(.)/g, '$1');
}
