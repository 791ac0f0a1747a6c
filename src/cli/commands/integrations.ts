/** `syncrelay integrations create|list|delete|set-credential|clear-credential`. */
import type { Command } from 'commander';
import { checkCredentialFor, deleteIntegration } from '../../planning/integrations.js';
import { storeCredential } from '../../secrets/credentials.js';
import { deleteCredential } from '../../store/credentials.js';
import {
  getIntegration,
  listDatasets,
  listIntegrations,
  listSources,
  type IntegrationRow,
} from '../../store/integrations.js';
import { jsonObject, list, uuid } from '../args.js';
import { CliError, isoOrDash, printable, printJson, printLine, printTable } from '../output.js';
import { withSession } from '../session.js';
import { credentialSourceOptions, readCredential, type CredentialSourceOptions } from './credentials.js';

interface CreateOptions extends CredentialSourceOptions {
  org: string;
  provider: string;
  name: string;
  sources: string[];
  datasets: string[];
  config?: Record<string, unknown>;
  json?: boolean;
}

export function registerIntegrations(program: Command): void {
  const integrations = program.command('integrations').description('create, list and delete integrations');

  const create = integrations.command('create');
  credentialSourceOptions(create);
  create
    .description('create an integration with its sources and datasets')
    .requiredOption('--org <org>', 'the org (tenant) it belongs to')
    .requiredOption('--provider <provider>', 'provider name, e.g. synthetic')
    .requiredOption('--name <name>', 'display name')
    .requiredOption(
      '--sources <keys>',
      'comma-separated source keys (repos, projects, teams), or "all" for a provider that finds them',
      list,
    )
    .requiredOption('--datasets <keys>', 'comma-separated dataset keys, e.g. teams,work-items', list)
    .option('--config <json>', 'provider config as a JSON object', jsonObject)
    .option('--json', 'print the created integration as JSON (id at the top level)')
    .addHelpText(
      'after',
      `
Example:
  syncrelay integrations create --org acme --provider synthetic --name "Acme Linear" \\
    --sources team-core,team-web --datasets teams,work-items \\
    --config '{"impersonate":"linear","itemsPerDay":5}'

The synthetic provider's datasets: teams, members, projects (reference) and work-items,
work-item-comments, work-item-labels, work-item-history. Its config keys: itemsPerDay, latencyMs,
failRate, rateLimitRate, hangRate, hangMs, seed, impersonate, rateLimitRetryAfterMs; the fault knobs
(failRate, rateLimitRate, hangRate, hangMs) need SYNCRELAY_ALLOW_FAULT_INJECTION=true.
A credential (an API token) is read from --credential-env NAME, --credential-file PATH or
--credential-stdin, never from the command line, and stored encrypted under SYNCRELAY_SECRET_KEY.
Everything is validated before anything is written.

--sources all: the provider finds the sources before each run is planned (a GitHub App integration:
its installation's repositories; new ones are added, those no longer listed disabled). E.g.
  syncrelay integrations create --org acme --provider github --name acme --sources all \\
    --datasets work-items,pull-requests --credential-file app-key.pem \\
    --config '{"auth":"app","appId":123456,"owner":"acme"}'`,
    )
    .action(async (opts: CreateOptions) => {
      const credential = await readCredential(opts);
      const found = opts.sources.length === 1 && opts.sources[0] === 'all';
      const created = await withSession({}, ({ engine }) =>
        engine.createIntegration({
          orgId: opts.org,
          provider: opts.provider,
          name: opts.name,
          sources: found ? 'all' : opts.sources,
          datasets: opts.datasets,
          config: opts.config,
          credential,
        }),
      );
      if (opts.json) return printJson(created);
      const { id, name, provider, org_id: org } = created;
      printLine(`created integration ${id} "${printable(name)}" (${printable(provider)}) in org ${printable(org)}`);
      if (found) printLine('  sources:  all (found by the provider before each run is planned)');
      else printLine(`  sources:  ${printable(created.sources.join(', ')) || '-'}`);
      printLine(`  datasets: ${printable(created.datasets.join(', '))}`);
      if (credential !== undefined) printLine('  credential: set (stored encrypted)');
    });

  registerCredentialCommands(integrations);

  integrations
    .command('list')
    .description('list integrations with their enabled sources and datasets')
    .option('--org <org>', 'only this org')
    .option('--json', 'print JSON')
    .action(async (opts: { org?: string; json?: boolean }) => {
      const rows = await withSession({}, async ({ engine }) => {
        const found = await listIntegrations(engine.db, opts.org ?? null);
        return Promise.all(found.map((i) => withChildren(engine.db, i)));
      });
      if (opts.json) return printJson(rows);
      printTable(rows, [
        { header: 'id', value: (r) => r.id },
        { header: 'org', value: (r) => r.org_id },
        { header: 'provider', value: (r) => r.provider },
        { header: 'name', value: (r) => r.name },
        { header: 'enabled', value: (r) => (r.enabled ? 'yes' : 'no') },
        { header: 'sources', value: (r) => r.sources.join(',') },
        { header: 'datasets', value: (r) => r.datasets.join(',') },
        { header: 'created', value: (r) => isoOrDash(r.created_at) },
      ]);
    });

  registerDelete(integrations);
}

function registerDelete(integrations: Command): void {
  integrations
    .command('delete')
    .description('delete an integration with its runs and schedules (its synced data stays unless --purge-data)')
    .argument('<id>', 'the integration id')
    .option('--org <org>', 'only if it belongs to this org')
    .option('--purge-data', 'also delete the rows it synced into the normalized tables and its metrics')
    .option('--json', 'print what was deleted as JSON')
    .action(async (id: string, opts: { org?: string; purgeData?: boolean; json?: boolean }) => {
      const done = await withSession({}, ({ engine }) =>
        deleteIntegration(engine.db, id, { orgId: opts.org ?? null, purgeData: opts.purgeData === true }),
      );
      if (opts.json) return printJson(done);
      const { integration: i } = done;
      printLine(`deleted integration ${i.id} "${printable(i.name)}" (${printable(i.provider)})`);
      printLine(`  runs deleted: ${done.runsDeleted}, schedules deleted: ${done.schedulesDeleted}`);
      if (!done.purged) return printLine('  synced data kept (use --purge-data to delete it)');
      const total = Object.values(done.purged).reduce((a, b) => a + b, 0);
      printLine(`  synced data purged: ${total} rows`);
    });
}

function registerCredentialCommands(integrations: Command): void {
  const set = integrations
    .command('set-credential')
    .description("set or replace an integration's credential (stored encrypted, never shown)")
    .argument('<id>', 'integration id', uuid);
  credentialSourceOptions(set)
    .addHelpText('after', '\nExample:\n  syncrelay integrations set-credential <id> --credential-env GITHUB_TOKEN')
    .action(async (id: string, opts: CredentialSourceOptions) => {
      const credential = await readCredential(opts);
      if (credential === undefined) {
        throw new CliError('name the credential with --credential-env, --credential-file or --credential-stdin');
      }
      // Replacing a credential is how one recovers from a lost key: no start-up key check here.
      await withSession({ checkSecretKeys: false }, ({ engine }) =>
        engine.db.transaction(async (tx) => {
          const row = await getIntegration(tx, id, { lock: true });
          if (!row) throw new CliError(`integration ${id} not found`);
          checkCredentialFor(engine.ctx.registry, row.provider, row.config, credential);
          const secret = { orgId: row.org_id, integrationId: id, secret: credential };
          await storeCredential(tx, engine.ctx.secrets, secret, engine.ctx.clock.now());
        }),
      );
      printLine(`credential of integration ${id} set (stored encrypted)`);
    });

  integrations
    .command('clear-credential')
    .description("remove an integration's credential")
    .argument('<id>', 'integration id', uuid)
    .action(async (id: string) => {
      const removed = await withSession({ checkSecretKeys: false }, ({ engine }) =>
        engine.db.transaction(async (tx) => {
          const row = await getIntegration(tx, id, { lock: true });
          if (!row) throw new CliError(`integration ${id} not found`);
          return deleteCredential(tx, row.org_id, id);
        }),
      );
      printLine(removed ? `credential of integration ${id} removed` : `integration ${id} had no credential`);
    });
}

async function withChildren(
  db: Parameters<typeof listSources>[0],
  i: IntegrationRow,
): Promise<IntegrationRow & { sources: string[]; datasets: string[] }> {
  const [sources, datasets] = await Promise.all([listSources(db, i.id), listDatasets(db, i.id)]);
  return {
    ...i,
    sources: sources.filter((s) => s.enabled).map((s) => s.external_key),
    datasets: datasets.filter((d) => d.enabled).map((d) => d.dataset_key),
  };
}
