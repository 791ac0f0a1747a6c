/**
 * Atlassian Document Format (the JSON of REST v3 comment and description bodies) as plain text:
 * the text of every node in document order; paragraphs, headings, list items, code blocks and
 * hard breaks end lines; mentions, emoji, dates and inline cards give their visible text.
 */

interface AdfNode {
  type?: unknown;
  text?: unknown;
  attrs?: Record<string, unknown>;
  content?: unknown;
}

const BLOCKS = new Set([
  'paragraph',
  'heading',
  'blockquote',
  'codeBlock',
  'listItem',
  'rule',
  'panel',
  'tableRow',
  'mediaSingle',
  'mediaGroup',
  'expand',
  'nestedExpand',
  'decisionItem',
  'taskItem',
]);

/** Plain text of an ADF document (a string body is returned as it is; anything else gives null). */
export function adfToText(doc: unknown): string | null {
  if (typeof doc === 'string') return doc;
  if (doc === null || typeof doc !== 'object') return null;
  const out: string[] = [];
  walk(doc, out, 0);
  return out
    .join('')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function walk(node: AdfNode, out: string[], depth: number): void {
  if (depth > 100) return;
  const type = typeof node.type === 'string' ? node.type : '';
  const inline = inlineText(type, node);
  if (inline !== null) {
    out.push(inline);
    return;
  }
  if (Array.isArray(node.content)) {
    for (const child of node.content) {
      if (child && typeof child === 'object') walk(child as AdfNode, out, depth + 1);
    }
  }
  if (type === 'tableCell' || type === 'tableHeader') out.push('\t');
  if (BLOCKS.has(type) && !endsWithNewline(out)) out.push('\n');
}

function endsWithNewline(out: string[]): boolean {
  const last = out.at(-1);
  return last === undefined || last.endsWith('\n');
}

function attr(node: AdfNode, key: string): string | null {
  const v = node.attrs?.[key];
  return typeof v === 'string' ? v : null;
}

function inlineText(type: string, node: AdfNode): string | null {
  switch (type) {
    case 'text':
      return typeof node.text === 'string' ? node.text : '';
    case 'hardBreak':
      return '\n';
    case 'mention':
      return attr(node, 'text') ?? '@' + (attr(node, 'id') ?? 'someone');
    case 'emoji':
      return attr(node, 'text') ?? attr(node, 'shortName') ?? '';
    case 'inlineCard':
    case 'blockCard':
      return attr(node, 'url') ?? '';
    case 'status':
      return attr(node, 'text') ?? '';
    case 'date': {
      const ts = Number(attr(node, 'timestamp'));
      return Number.isFinite(ts) ? new Date(ts).toISOString().slice(0, 10) : '';
    }
    default:
      return null;
  }
}
