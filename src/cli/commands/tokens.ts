/** `syncrelay tokens create|list|revoke`: org-scoped API tokens, stored only as their hash. */
import type { Command } from 'commander';
import { createApiToken, validateOrg } from '../../api/tokens.js';
import { getApiToken, listApiTokens, revokeApiToken, type ApiTokenRow } from '../../store/apiTokens.js';
import { list, uuid } from '../args.js';
import { CliError, isoOrDash, note, printJson, printLine, printTable } from '../output.js';
import { withSession } from '../session.js';

interface CreateOptions {
  org: string;
  scopes: string[];
  name?: string;
  json?: boolean;
}

function present(t: ApiTokenRow) {
  return {
    id: t.id,
    org_id: t.org_id,
    name: t.name,
    scopes: t.scopes,
    created_at: t.created_at,
    last_used_at: t.last_used_at,
    revoked_at: t.revoked_at,
  };
}

export function registerTokens(program: Command): void {
  const tokens = program.command('tokens').description('create, list and revoke API tokens');

  tokens
    .command('create')
    .description('create an API token for an org (printed once; only its hash is stored)')
    .requiredOption('--org <org>', 'the org the token may see and act on')
    .requiredOption('--scopes <scopes>', 'comma-separated: read, trigger, admin (admin holds all)', list)
    .option('--name <name>', 'a label to recognise the token by')
    .option('--json', 'print {"token", "id", "org_id", "name", "scopes"}')
    .addHelpText(
      'after',
      `
Scopes: read (GET endpoints), trigger (sync, backfill, cancel), admin (everything, including
creating integrations). Use the token as "Authorization: Bearer <token>".

Example:
  syncrelay tokens create --org acme --scopes read,trigger --name ci`,
    )
    .action(async (opts: CreateOptions) => {
      const created = await withSession({}, ({ engine }) =>
        createApiToken(engine.db, engine.ctx.clock, { orgId: opts.org, name: opts.name, scopes: opts.scopes }),
      );
      const { row } = created;
      if (opts.json) {
        return printJson({ token: created.token, id: row.id, org_id: row.org_id, name: row.name, scopes: row.scopes });
      }
      printLine(created.token);
      note(
        `token ${row.id} for org ${row.org_id} (scopes: ${row.scopes.join(', ')}); ` +
          'it is shown only now, store it safely',
      );
    });

  tokens
    .command('list')
    .description("list an org's tokens (never the tokens themselves)")
    .requiredOption('--org <org>', 'the org')
    .option('--json', 'print the tokens as JSON')
    .action(async (opts: { org: string; json?: boolean }) => {
      validateOrg(opts.org);
      const rows = await withSession({}, ({ engine }) => listApiTokens(engine.db, opts.org));
      if (opts.json) return printJson(rows.map(present));
      printTable(rows, [
        { header: 'ID', value: (t) => t.id },
        { header: 'NAME', value: (t) => t.name },
        { header: 'SCOPES', value: (t) => t.scopes.join(',') },
        { header: 'CREATED', value: (t) => isoOrDash(t.created_at) },
        { header: 'LAST USED', value: (t) => isoOrDash(t.last_used_at) },
        { header: 'REVOKED', value: (t) => isoOrDash(t.revoked_at) },
      ]);
    });

  tokens
    .command('revoke')
    .description('revoke a token: it answers 401 from now on')
    .argument('<id>', 'the token id (UUID, from `tokens list`)', uuid)
    .option('--org <org>', 'only if the token belongs to this org')
    .option('--json', 'print the revoked token as JSON')
    .action(async (id: string, opts: { org?: string; json?: boolean }) => {
      const outcome = await withSession({}, async ({ engine }) => {
        const revoked = await revokeApiToken(engine.db, id, engine.ctx.clock.now(), opts.org);
        return { revoked, existing: revoked ? null : await getApiToken(engine.db, id, opts.org) };
      });
      const row = outcome.revoked ?? outcome.existing;
      if (!row) throw new CliError(`token ${id} not found${opts.org ? ` in org ${opts.org}` : ''}`);
      if (opts.json) return printJson(present(row));
      printLine(
        outcome.revoked ? `revoked token ${id}` : `token ${id} was already revoked at ${isoOrDash(row.revoked_at)}`,
      );
    });
}
