/**
 * The JQL the emulator understands: exactly the queries the provider sends —
 * `project = <value>`, any number of `updated <op> <date>` and at most one `id in (<id>, …)`,
 * joined with AND in any order, then `[ORDER BY updated [ASC|DESC][, key ASC]]` (ties are in id
 * order, which is key order within a project) — with `<op>` one of `>=`,
 * `>`, `<`, `<=`, values quoted ("…" or '…', backslash escapes) or bare words, dates as
 * `yyyy-MM-dd HH:mm`, `yyyy/MM/dd HH:mm` or `yyyy-MM-dd` in the user's time zone, and the ids of
 * `id in (…)` numeric issue ids, bare or quoted, at least one. Anything else is a `JqlError`
 * (Jira's 400).
 */
import { jqlDateInstant } from './time.js';

export class JqlError extends Error {}

export interface ParsedJql {
  project: string;
  /** Bounds on `updated` (epoch ms): each `[op, ms]`. */
  updated: { op: '>=' | '>' | '<' | '<='; ms: number }[];
  /** The issue ids of an `id in (…)` clause, in the order written (null: no such clause). */
  ids: string[] | null;
  order: 'ASC' | 'DESC';
}

type Token = { kind: 'word' | 'string' | 'op' | 'punct'; text: string; at: number };

const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', '"': '"', "'": "'", '\\': '\\', ' ': ' ' };

function readString(jql: string, start: number): { text: string; end: number } {
  const quote = jql[start]!;
  let out = '';
  for (let i = start + 1; i < jql.length; i++) {
    const ch = jql[i]!;
    if (ch === quote) return { text: out, end: i + 1 };
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const next = jql[++i];
    if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(jql.slice(i + 1, i + 5))) {
      out += String.fromCharCode(parseInt(jql.slice(i + 1, i + 5), 16));
      i += 4;
    } else if (next !== undefined && ESCAPES[next] !== undefined) out += ESCAPES[next];
    else throw new JqlError(`Error in the JQL Query: '\\${next ?? ''}' is an illegal JQL escape sequence.`);
  }
  throw new JqlError(`Error in the JQL Query: The quoted string starting at character ${start} is not closed.`);
}

export function tokenize(jql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < jql.length) {
    const ch = jql[i]!;
    if (/\s/.test(ch)) i++;
    else if (ch === '"' || ch === "'") {
      const s = readString(jql, i);
      out.push({ kind: 'string', text: s.text, at: i });
      i = s.end;
    } else if ('<>=!'.includes(ch)) {
      const op = /^(>=|<=|!=|=|<|>)/.exec(jql.slice(i))![0];
      out.push({ kind: 'op', text: op, at: i });
      i += op.length;
    } else if ('(),'.includes(ch)) {
      out.push({ kind: 'punct', text: ch, at: i });
      i++;
    } else {
      const m = /^[A-Za-z0-9_.-]+/.exec(jql.slice(i));
      if (!m) throw new JqlError(`Error in the JQL Query: The character '${ch}' is a reserved JQL character.`);
      out.push({ kind: 'word', text: m[0], at: i });
      i += m[0].length;
    }
  }
  return out;
}

function unsupported(tok: Token | undefined): JqlError {
  const where = tok ? `'${tok.text}' at character ${tok.at}` : 'the end of the query';
  return new JqlError(`Error in the JQL Query: Expecting a clause of this emulator's subset but got ${where}.`);
}

/** Parses `jql`; dates are read in `timeZone`. */
export function parseJql(jql: string, timeZone: string): ParsedJql {
  const toks = tokenize(jql);
  let i = 0;
  const word = (w: string) => toks[i]?.kind === 'word' && toks[i]!.text.toUpperCase() === w;
  const punct = (p: string) => toks[i]?.kind === 'punct' && toks[i]!.text === p;
  const value = (): string => {
    const tok = toks[i++];
    if (!tok || (tok.kind !== 'word' && tok.kind !== 'string')) throw unsupported(tok);
    return tok.text;
  };
  /** `(<id>, …)` after `id in`: one numeric id at least, bare or quoted. */
  const idList = (): string[] => {
    if (!punct('(')) throw unsupported(toks[i]);
    i++;
    if (punct(')')) {
      throw new JqlError(
        `Error in the JQL Query: Expecting either a value, list or function but got ')' at character ${toks[i]!.at}.`,
      );
    }
    const out: string[] = [];
    for (;;) {
      const id = value();
      if (!/^\d+$/.test(id)) throw new JqlError(`The value '${id}' for field 'id' is not a numeric issue id.`);
      out.push(id);
      if (punct(')')) break;
      if (!punct(',')) throw unsupported(toks[i]);
      i++;
    }
    i++;
    return out;
  };
  let project: string | null = null;
  let ids: string[] | null = null;
  const updated: ParsedJql['updated'] = [];
  for (;;) {
    const field = toks[i++];
    if (!field || field.kind !== 'word') throw unsupported(field);
    const f = field.text.toLowerCase();
    if (f === 'id' && ids === null && word('IN')) {
      i++;
      ids = idList();
    } else {
      const op = toks[i++];
      if (!op || op.kind !== 'op') throw unsupported(field);
      if (f === 'project' && op.text === '=' && project === null) project = value();
      else if (f === 'updated' && ['>=', '>', '<', '<='].includes(op.text)) {
        const text = value();
        const ms = jqlDateInstant(text, timeZone);
        if (!Number.isFinite(ms)) {
          throw new JqlError(
            `Date value '${text}' for field 'updated' is invalid. Valid formats include: 'yyyy/MM/dd HH:mm', ` +
              `'yyyy-MM-dd HH:mm', 'yyyy/MM/dd', 'yyyy-MM-dd', or a period format e.g. '-5d', '4w 2d'.`,
          );
        }
        updated.push({ op: op.text as ParsedJql['updated'][number]['op'], ms });
      } else throw unsupported(field);
    }
    if (!word('AND')) break;
    i++;
  }
  let order: 'ASC' | 'DESC' = 'ASC';
  if (word('ORDER')) {
    i++;
    if (!word('BY')) throw unsupported(toks[i]);
    i++;
    if (toks[i]?.text.toLowerCase() !== 'updated') throw unsupported(toks[i]);
    i++;
    if (word('ASC') || word('DESC')) order = toks[i++]!.text.toUpperCase() as 'ASC' | 'DESC';
    if (punct(',')) {
      i++;
      if (!word('KEY')) throw unsupported(toks[i]);
      i++;
      if (word('ASC')) i++;
    }
  }
  if (i < toks.length) throw unsupported(toks[i]);
  if (project === null) throw unsupported(undefined);
  return { project, updated, ids, order };
}

/** Whether an issue updated at `ms` meets every bound. */
export function matchesUpdated(q: ParsedJql, ms: number): boolean {
  return q.updated.every(({ op, ms: bound }) =>
    op === '>=' ? ms >= bound : op === '>' ? ms > bound : op === '<' ? ms < bound : ms <= bound,
  );
}
