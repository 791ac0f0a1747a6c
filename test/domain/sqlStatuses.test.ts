/**
 * One source for statuses: every status SQL compares or assigns is a member of the domain's sets
 * (src/domain/statuses.ts), and src/store spells none at all — its statements interpolate the
 * constants src/store/sql.ts renders from the domain's sets and transition tables.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  JOB_RUN_STATUSES,
  OUTBOX_STATUSES,
  RUN_STATUSES,
  UNIT_STATUSES,
  UNIT_TRANSITIONS,
} from '../../src/domain/statuses.js';
import { RUN_TERMINAL_SQL, UNIT_OPEN_SQL, UNIT_TERMINAL_SQL } from '../../src/store/rows.js';
import { sqlEach, sqlFrom, sqlList, sqlLit, type AnyStatus } from '../../src/store/sql.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KNOWN: ReadonlySet<string> = new Set<string>([
  ...RUN_STATUSES,
  ...UNIT_STATUSES,
  ...JOB_RUN_STATUSES,
  ...OUTBOX_STATUSES,
]);

interface StatusLiteral {
  literal: string;
  line: number;
  /** The SQL the literal was found in, for the failure message. */
  context: string;
}

/** A `status` column, optionally behind an alias (`u.status`); not `new_status` or `status_code`. */
const COLUMN = String.raw`(?<![\w$])(?:[A-Za-z_]\w*\.)?status\b`;
/** `status = 'x'`, `status <> 'x'`, `status != 'x'` (also `SET status = 'x'`, `WHEN status = 'x'`). */
const COMPARE = new RegExp(String.raw`${COLUMN}\s*(?:=|<>|!=)\s*'([^']*)'`, 'g');
/** `status IN ('x', 'y')`, `status NOT IN (...)`: every literal of the list. */
const IN_LIST = new RegExp(String.raw`${COLUMN}\s+(?:NOT\s+)?IN\s*\(([^)]*)\)`, 'gi');
/** `status = CASE … THEN 'x' ELSE 'y' END`: the statuses a CASE assigns. */
const CASE_ASSIGN = new RegExp(String.raw`${COLUMN}\s*=\s*CASE\b([\s\S]*?)\bEND\b`, 'gi');
/** `CASE r.status WHEN 'x' THEN …`: the statuses a CASE compares with. */
const CASE_ON = new RegExp(String.raw`CASE\s+${COLUMN}((?:\s+WHEN\s+'[^']*'\s+THEN\s+[^\s]+)+)`, 'gi');
/** `INSERT INTO t (…, status, …) VALUES (…)` or `… SELECT …`: the value in the status position. */
const INSERT = /INSERT\s+INTO\s+[^\s(]+(?:\s+AS\s+\w+)?\s*\(([^)]*)\)\s*(VALUES\s*\(|SELECT\s+(?:DISTINCT\s+ON\s*)?)/gi;

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

function quoted(text: string): string[] {
  return [...text.matchAll(/'([^']*)'/g)].map((m) => m[1]!);
}

/** Splits at top-level commas until the list (or select list) ends; quotes and parentheses nest. */
function topLevelItems(text: string, start: number, selectList: boolean): string[] {
  const items: string[] = [];
  let depth = 0;
  let inQuote = false;
  let item = '';
  for (let i = start; i < text.length; i++) {
    const c = text[i]!;
    if (inQuote) {
      if (c === "'") inQuote = false;
    } else if (c === "'") {
      inQuote = true;
    } else if (c === '(') {
      depth++;
    } else if (c === ')') {
      if (depth === 0) break;
      depth--;
    } else if (depth === 0 && c === ',') {
      items.push(item.trim());
      item = '';
      continue;
    } else if (depth === 0 && selectList && /^\sFROM\b/i.test(text.slice(i, i + 6))) {
      break;
    }
    item += c;
  }
  items.push(item.trim());
  return items;
}

/** Every single-quoted literal compared with or assigned to a `status` column in `text`. */
function statusLiterals(text: string): StatusLiteral[] {
  const out: StatusLiteral[] = [];
  const add = (literals: string[], index: number, context: string) => {
    for (const literal of literals) out.push({ literal, line: lineOf(text, index), context: context.trim() });
  };
  for (const m of text.matchAll(COMPARE)) add([m[1]!], m.index, m[0]);
  for (const m of text.matchAll(IN_LIST)) add(quoted(m[1]!), m.index, m[0]);
  for (const m of text.matchAll(CASE_ASSIGN)) {
    add(
      [...m[1]!.matchAll(/\b(?:THEN|ELSE)\s+'([^']*)'/gi)].map((x) => x[1]!),
      m.index,
      m[0],
    );
  }
  for (const m of text.matchAll(CASE_ON)) {
    add(
      [...m[1]!.matchAll(/\bWHEN\s+'([^']*)'/gi)].map((x) => x[1]!),
      m.index,
      m[0],
    );
  }
  for (const m of text.matchAll(INSERT)) {
    const columns = m[1]!.split(',').map((c) => c.trim());
    const at = columns.indexOf('status');
    if (at < 0) continue;
    let start = m.index + m[0].length;
    if (/DISTINCT\s+ON\s*$/i.test(m[0])) start = text.indexOf(')', start) + 1;
    const value = topLevelItems(text, start, !m[2]!.toUpperCase().startsWith('VALUES'))[at];
    const literal = value && /^'([^']*)'(?:::\w+)?$/.exec(value);
    if (literal) add([literal[1]!], m.index, m[0]);
  }
  return out;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(path);
    return e.isFile() && e.name.endsWith('.ts') ? [path] : [];
  });
}

function scan(files: readonly string[]): (StatusLiteral & { file: string })[] {
  return files.flatMap((file) =>
    statusLiterals(readFileSync(file, 'utf8')).map((l) => ({ ...l, file: relative(ROOT, file) })),
  );
}

const describeHit = (h: StatusLiteral & { file: string }) => `${h.file}:${h.line} '${h.literal}' in ${h.context}`;

describe('the status-literal scanner', () => {
  const sample = `
    UPDATE sync_run_units u SET status = 'runing', updated_at = $3
     WHERE u.status IN ('planned', 'dispatching') AND status <> 'succes' AND r.status NOT IN ('cancelled')
       AND o.status != 'pending' AND new_status = 'ignored' AND status_code = 'ignored'
    UPDATE job_runs j SET status = CASE r.status WHEN 'success' THEN 'success' ELSE 'faild' END
    INSERT INTO sync_runs (org_id, mode, status, result) VALUES ($1, $2, 'plannd', jsonb_build_object('a', 1))
    INSERT INTO sync_dispatch_outbox AS o (org_id, sync_run_id, kind, status, available_at)
    SELECT DISTINCT ON (run_id, kind) org_id, run_id, kind, 'pendng', $3::timestamptz FROM wakes
    if (run.status === 'ignored' || run.status !== 'ignored') {}
  `;
  const found = statusLiterals(sample).map((l) => l.literal);

  it('finds comparisons, IN lists, CASE forms and INSERT values, with or without an alias', () => {
    expect(found.sort()).toEqual(
      [
        'runing',
        'planned',
        'dispatching',
        'succes',
        'cancelled',
        'pending',
        'success',
        'success',
        'faild',
        'plannd',
        'pendng',
      ].sort(),
    );
  });

  it("flags a misspelt status such as status = 'runing'", () => {
    const unknown = statusLiterals("UPDATE t SET status = 'runing' WHERE status = 'running'")
      .map((l) => l.literal)
      .filter((l) => !KNOWN.has(l));
    expect(unknown).toEqual(['runing']);
  });

  it('finds every status literal the store spelled before it used the helper', () => {
    const before = `
      WHERE status = 'pending' AND available_at <= $1
      AND (status IN ('planned', 'retrying') OR (status = 'dispatching' AND (updated_at <= $3)))
      INSERT INTO sync_runs (org_id, integration_id, triggered_by, mode, status, result, created_at, updated_at)
      VALUES ($1, $2, $3, $4, 'planned', $5::jsonb, $6, $6) RETURNING *`;
    expect(statusLiterals(before).map((l) => l.literal)).toEqual([
      'pending',
      'dispatching',
      'planned',
      'retrying',
      'planned',
    ]);
  });
});

describe('statuses in SQL come from the domain', () => {
  it('every status literal under src/ is a run, unit, JobRun or outbox status', () => {
    const unknown = scan(tsFiles(join(ROOT, 'src'))).filter((h) => !KNOWN.has(h.literal));
    expect(unknown.map(describeHit)).toEqual([]);
  });

  it('src/store spells no status literal: every one comes from src/store/sql.ts', () => {
    const files = readdirSync(join(ROOT, 'src/store'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join(ROOT, 'src/store', f));
    expect(files.length).toBeGreaterThan(5);
    expect(scan(files).map(describeHit)).toEqual([]);
  });

  it("the migrations' CHECK constraints allow exactly the domain's statuses", () => {
    const sql = readFileSync(join(ROOT, 'migrations/0001_init.sql'), 'utf8');
    const allowed = (table: string) => {
      const body = new RegExp(String.raw`CREATE TABLE ${table} \(([\s\S]*?)\n\);`).exec(sql)?.[1] ?? '';
      return quoted(/CHECK \(status IN \(([^)]*)\)\)/.exec(body)?.[1] ?? '').sort();
    };
    expect(allowed('sync_runs')).toEqual([...RUN_STATUSES].sort());
    expect(allowed('sync_run_units')).toEqual([...UNIT_STATUSES].sort());
    expect(allowed('job_runs')).toEqual([...JOB_RUN_STATUSES].sort());
    expect(allowed('sync_dispatch_outbox')).toEqual([...OUTBOX_STATUSES].sort());
  });
});

describe('the SQL status helper', () => {
  it('renders a status and a status list', () => {
    expect(sqlLit('running')).toBe("'running'");
    expect(sqlList(['planned', 'dispatching'])).toBe("('planned', 'dispatching')");
    expect(RUN_TERMINAL_SQL).toBe("('success', 'partial_failed', 'failed', 'cancelled')");
    expect(UNIT_TERMINAL_SQL).toBe("('success', 'failed', 'cancelled')");
    expect(UNIT_OPEN_SQL).toBe("('planned', 'dispatching', 'running', 'retrying')");
  });

  it('refuses anything but a domain status, and an empty list', () => {
    expect(() => sqlLit("running') OR ('1' = '1" as AnyStatus)).toThrow(/not a syncrelay status/);
    expect(() => sqlLit('runing' as AnyStatus)).toThrow(/not a syncrelay status/);
    expect(() => sqlList([])).toThrow(/empty/);
  });

  it('names members of a transition only when the names cover it exactly', () => {
    expect(sqlEach(UNIT_TRANSITIONS.dispatch.from, 'planned', 'retrying')).toEqual({
      planned: "'planned'",
      retrying: "'retrying'",
    });
    expect(() => sqlEach(UNIT_TRANSITIONS.dispatch.from, 'planned')).toThrow(/exactly/);
  });

  it('renders the statuses shared transitions move from', () => {
    expect(sqlFrom(UNIT_TRANSITIONS.succeed, UNIT_TRANSITIONS.fail)).toBe("('running')");
    expect(sqlFrom(UNIT_TRANSITIONS.deny, UNIT_TRANSITIONS.dispatch)).toBe("('planned', 'retrying')");
    expect(() => sqlFrom(UNIT_TRANSITIONS.claim, UNIT_TRANSITIONS.succeed)).toThrow(/empty/);
  });
});
