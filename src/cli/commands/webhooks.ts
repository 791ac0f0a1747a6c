/**
 * `syncrelay webhooks secret --integration ID [--rotate] [--secret-stdin]`: generates a GitHub,
 * Linear or Jira integration's webhook secret, printed once (or stores the one the provider made,
 * read from stdin). `syncrelay webhooks deliveries --integration ID`: its deliveries, summed up.
 */
import { Option, type Command } from 'commander';
import { after } from '../../clock.js';
import { WEBHOOK_PROVIDERS } from '../../planning/webhookReaders.js';
import {
  createWebhookSecret,
  PROVIDED_WEBHOOK_SECRET_RE,
  PROVIDED_WEBHOOK_SECRET_RULE,
} from '../../secrets/webhookSecrets.js';
import { getIntegration } from '../../store/integrations.js';
import { WEBHOOK_DELIVERY_STATUSES, type WebhookDeliveryStatus } from '../../store/webhookDeliveries.js';
import {
  listWebhookDeliveries,
  summarizeWebhookDeliveries,
  type DeliveryListRow,
  type DeliverySummary,
} from '../../store/webhookDeliveryReports.js';
import { intInRange, uuid } from '../args.js';
import { CliError, formatDuration, isoOrDash, printJson, printLine, printTable } from '../output.js';
import { withSession } from '../session.js';
import { dropNewline, fromStream } from './credentials.js';

interface SecretOptions {
  integration: string;
  rotate?: boolean;
  secretStdin?: boolean;
  json?: boolean;
}

/** The provider's secret from stdin (one trailing newline dropped), checked; undefined without --secret-stdin. */
async function providedSecret(opts: SecretOptions): Promise<string | undefined> {
  if (!opts.secretStdin) return undefined;
  const value = dropNewline(await fromStream(process.stdin));
  if (!PROVIDED_WEBHOOK_SECRET_RE.test(value))
    throw new CliError(`--secret-stdin: the secret ${PROVIDED_WEBHOOK_SECRET_RULE}`);
  return value;
}

export function registerWebhooks(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description("an integration's webhooks: the secret GitHub, Linear or Jira signs them with, and its deliveries");

  webhooks
    .command('secret')
    .description('generate the webhook secret of a GitHub, Linear or Jira integration (printed once, stored encrypted)')
    .requiredOption('--integration <id>', 'the integration', uuid)
    .option(
      '--rotate',
      'replace the existing secret; the previous one is accepted for SYNC_WEBHOOK_SECRET_GRACE_SECONDS',
    )
    .option('--secret-stdin', "store the secret the provider generated (Linear's), read from standard input")
    .option('--json', 'print {"integration_id", "secret", "version", "previous_expires_at"}')
    .addHelpText(
      'after',
      `
The secret is 32 random bytes in hex. Enter it as the webhook's secret at the provider, payload URL
<api>/api/v1/webhooks/<github|linear|jira>/<integration id> (GitHub: content type application/json).
Linear shows a signing secret it made on the webhook's page: store that one with --secret-stdin.
It is printed only now; to see a new one, rotate. After --rotate, deliveries signed with the
previous secret are still accepted for SYNC_WEBHOOK_SECRET_GRACE_SECONDS (default 3600), time to
update the webhook on GitHub.`,
    )
    .action(async (opts: SecretOptions) => {
      const given = await providedSecret(opts);
      const created = await withSession({}, ({ engine }) =>
        engine.db.transaction(async (tx) => {
          const row = await getIntegration(tx, opts.integration, { lock: true });
          if (!row) throw new CliError(`no integration ${opts.integration}`);
          if (!WEBHOOK_PROVIDERS.includes(row.provider)) {
            const known = WEBHOOK_PROVIDERS.join(', ');
            throw new CliError(
              `integration ${row.id} is a ${row.provider} integration: webhooks are received for ${known}`,
            );
          }
          const { settings, secrets, clock } = engine.ctx;
          const target = { orgId: row.org_id, integrationId: row.id };
          const made = await createWebhookSecret(
            tx,
            secrets,
            target,
            {
              rotate: opts.rotate ?? false,
              graceMs: settings.webhookSecretGraceMs,
              ...(given === undefined ? {} : { given }),
            },
            clock.now(),
          );
          if (!made)
            throw new CliError(`integration ${row.id} has a webhook secret already; give --rotate for a new one`);
          return made;
        }),
      );
      const previous = created.previousExpiresAt?.toISOString() ?? null;
      if (opts.json) {
        return printJson({
          integration_id: opts.integration,
          secret: created.secret,
          version: created.version,
          previous_expires_at: previous,
        });
      }
      printLine(created.secret);
      if (previous) printLine(`the previous secret is accepted until ${previous}`);
    });

  registerDeliveries(webhooks);
}

interface DeliveriesOptions {
  integration: string;
  status?: WebhookDeliveryStatus;
  limit: number;
  json?: boolean;
}

/** The summary's window, in hours (the API's default). */
const SUMMARY_HOURS = 24;

/**
 * `syncrelay webhooks deliveries --integration ID [--status S] [--limit N] [--json]`: the summary of
 * the integration's deliveries over the last 24 h, then its newest deliveries.
 */
function registerDeliveries(webhooks: Command): void {
  webhooks
    .command('deliveries')
    .description("an integration's webhook deliveries: the last 24 h summed up, then the newest ones")
    .requiredOption('--integration <id>', 'the integration', uuid)
    .addOption(new Option('--status <status>', 'only deliveries of this status').choices(WEBHOOK_DELIVERY_STATUSES))
    .option('--limit <n>', 'at most this many deliveries', intInRange(1, 1000), 20)
    .option('--json', 'print {"summary", "deliveries"}')
    .addHelpText(
      'after',
      `
The summary counts the deliveries received in the last ${SUMMARY_HOURS} h by status, the received ones by
outcome (armed, coalesced, pending, ignored) and the runs they armed or joined, and gives the time
from a delivery to its data: its run's end minus the delivery's receipt, over deliveries whose run
ended success (p50, p95, max).`,
    )
    .action(async (opts: DeliveriesOptions) => {
      const { summary, deliveries } = await withSession({}, async ({ engine }) => {
        const row = await getIntegration(engine.db, opts.integration);
        if (!row) throw new CliError(`no integration ${opts.integration}`);
        const until = engine.ctx.clock.now();
        const since = after(until, -SUMMARY_HOURS * 3_600_000);
        const filter = { orgId: row.org_id, integrationId: row.id, status: opts.status, limit: opts.limit };
        return {
          summary: {
            since,
            until,
            ...(await summarizeWebhookDeliveries(engine.db, row.org_id, row.id, since, until)),
          },
          deliveries: await listWebhookDeliveries(engine.db, filter),
        };
      });
      const listed = deliveries.map(({ cursor_us: _cursor, ...d }) => d);
      if (opts.json)
        return printJson({ summary: { integration_id: opts.integration, ...summary }, deliveries: listed });
      printSummary(summary);
      printLine();
      printDeliveries(deliveries);
    });
}

function printSummary(s: DeliverySummary & { since: Date; until: Date }): void {
  const joined = (counts: Record<string, number>) =>
    Object.entries(counts)
      .map(([k, n]) => `${k} ${n}`)
      .join(' · ');
  const t = s.delivery_to_data;
  printLine(`deliveries since ${isoOrDash(s.since)} (last ${SUMMARY_HOURS} h)`);
  printLine(`  by status      ${joined(s.statuses)}`);
  printLine(`  received       ${joined(s.outcomes)}`);
  printLine(`  runs armed     ${s.runs_armed}`);
  printLine(
    t.samples === 0
      ? '  delivery → data  no received delivery of the window has a successful run yet'
      : `  delivery → data  p50 ${formatDuration(t.p50_ms)} · p95 ${formatDuration(t.p95_ms)} · ` +
          `max ${formatDuration(t.max_ms)} (${t.samples} deliveries)`,
  );
}

function printDeliveries(rows: readonly DeliveryListRow[]): void {
  printTable(rows, [
    { header: 'received', value: (d) => isoOrDash(d.received_at) },
    { header: 'status', value: (d) => d.status },
    { header: 'outcome', value: (d) => d.outcome },
    { header: 'event', value: (d) => (d.action ? `${d.event ?? '-'}.${d.action}` : d.event) },
    { header: 'source', value: (d) => d.source },
    { header: 'delivery', value: (d) => d.delivery_id },
    { header: 'run', value: (d) => d.sync_run_id },
  ]);
}
