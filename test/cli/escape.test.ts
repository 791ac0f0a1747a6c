/**
 * The CLI prints control characters as escapes — in tables, `key  value` pairs and one-line
 * messages — so a stored name cannot move the cursor, recolour the terminal or forge a line; and
 * `integrations create` refuses control characters and (without SYNCRELAY_ALLOW_FAULT_INJECTION)
 * the synthetic provider's fault knobs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorLine, formatPairs, formatTable, oneLine, printable } from '../../src/cli/output.js';
import { ValidationError } from '../../src/errors.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { parseJson, runCli } from './helpers.js';

const EVIL = 'Acme\u001b[2J\u001b[31m\r\nforged line\t\u0007\u007f\u0085\u009b';
const ESCAPED = 'Acme\\x1b[2J\\x1b[31m\\r\\nforged line\\t\\x07\\x7f\\x85\\x9b';
/** C0, DEL and C1 (what must never reach the terminal raw). */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe('output escaping', () => {
  it('printable escapes every control character and nothing else', () => {
    expect(printable(EVIL)).toBe(ESCAPED);
    expect(printable('Zürich — 日本 😀 back\\slash')).toBe('Zürich — 日本 😀 back\\slash');
    expect(printable(printable(EVIL))).toBe(ESCAPED);
  });

  it('table cells and pair values are escaped; the layout stays one row per line', () => {
    const table = formatTable(
      [{ name: EVIL, n: 1 }],
      [
        { header: 'name', value: (r) => r.name },
        { header: 'n', value: (r) => r.n, align: 'right' },
      ],
    );
    expect(table.split('\n')).toHaveLength(2);
    expect(table).toContain(ESCAPED);
    expect(table).not.toMatch(RAW_CONTROL);
    const pairs = formatPairs([
      ['error', EVIL],
      ['status', 'failed'],
    ]);
    expect(pairs.split('\n')).toHaveLength(2);
    expect(pairs).not.toMatch(RAW_CONTROL);
  });

  it('one-line messages collapse line breaks and escape the other controls', () => {
    expect(oneLine('first\n  second\u001b[0m')).toBe('first second\\x1b[0m');
    const line = errorLine(new ValidationError('name', `unknown "${EVIL}"`));
    expect(line).not.toMatch(/[\n\r]/);
    expect(line).not.toMatch(RAW_CONTROL);
    expect(line).toContain('\\x1b[2J');
  });
});

describe('the syncrelay command', () => {
  let t: TestDatabase;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await createTestDatabase({ poolSize: 2 });
    env = { DATABASE_URL: t.url };
  });
  afterAll(async () => {
    await t?.drop();
  });

  const create = (extra: string[], more: Record<string, string> = {}) =>
    runCli(
      [
        'integrations',
        'create',
        '--org',
        'esc',
        '--provider',
        'synthetic',
        '--sources',
        's1',
        '--datasets',
        'teams',
        ...extra,
      ],
      { env: { ...env, ...more } },
    );
  const integrations = async () =>
    (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM syncrelay.integrations')).rows[0]!.n;

  it('lists a stored name with control characters escaped, one row per line', async () => {
    // Written directly, as by a version that did not refuse control characters.
    const { rows } = await t.db.query<{ id: string }>(
      `INSERT INTO syncrelay.integrations (org_id, provider, name) VALUES ('esc-list', 'synthetic', $1) RETURNING id`,
      [EVIL],
    );
    await t.db.query(
      `INSERT INTO syncrelay.integration_sources (org_id, integration_id, external_key, name)
       VALUES ('esc-list', $1, $2, $2)`,
      [rows[0]!.id, 'team\u001b]0;pwned\u0007'],
    );
    const r = await runCli(['integrations', 'list', '--org', 'esc-list'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(2);
    expect(r.stdout).toContain(ESCAPED);
    expect(r.stdout).toContain('team\\x1b]0;pwned\\x07');
    // JSON output was always escaped by JSON.stringify.
    const json = await runCli(['integrations', 'list', '--org', 'esc-list', '--json'], { env });
    expect(parseJson<{ name: string }[]>(json.stdout)[0]!.name).toBe(EVIL);
  });

  it('an error quoting bad input is one escaped line', async () => {
    const before = await integrations();
    const r = await create(['--name', 'n', '--datasets', 'teams,\u001b[31mevil\u0085']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).not.toMatch(RAW_CONTROL);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      'syncrelay: datasets: unknown dataset "\\x1b[31mevil\\x85" for synthetic',
    ]);
    expect(await integrations()).toBe(before);
  });

  it.each([
    ['a name', ['--name', 'bad\u001b[2Jname'], /^syncrelay: name: must not contain control characters$/],
    ['a source key', ['--name', 'n', '--sources', 'ok,te\u009bam'], /^syncrelay: sources\.1: must not contain/],
    ['a long source key', ['--name', 'n', '--sources', 's'.repeat(201)], /^syncrelay: sources\.0: must be at most 200/],
    ['a provider name', ['--name', 'n', '--provider', 'Synthetic'], /^syncrelay: provider: must be a lower-case/],
  ])('integrations create refuses %s with control characters or past its limit', async (_, extra, reason) => {
    const before = await integrations();
    const r = await create(extra);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr.trimEnd()).toMatch(reason);
    expect(await integrations()).toBe(before);
  });

  it('fault knobs need SYNCRELAY_ALLOW_FAULT_INJECTION=true', async () => {
    const before = await integrations();
    const refused = await create(['--name', 'faulty', '--config', '{"failRate":0.1}']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/^syncrelay: config\.failRate: .*SYNCRELAY_ALLOW_FAULT_INJECTION=true/);
    expect(await integrations()).toBe(before);
    const allowed = await create(['--name', 'faulty', '--config', '{"failRate":0.1}', '--json'], {
      SYNCRELAY_ALLOW_FAULT_INJECTION: 'true',
    });
    expect(allowed.stderr).toBe('');
    expect(parseJson<{ config: unknown }>(allowed.stdout).config).toEqual({ failRate: 0.1 });
  });
});
