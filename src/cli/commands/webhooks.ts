/**
 * `syncrelay webhooks secret --integration ID [--rotate]`: generates a GitHub integration's webhook
 * secret, printed once.
 */
import type { Command } from 'commander';
import { GITHUB_WEBHOOK_PROVIDER } from '../../planning/githubWebhooks.js';
import { createWebhookSecret } from '../../secrets/webhookSecrets.js';
import { getIntegration } from '../../store/integrations.js';
import { uuid } from '../args.js';
import { CliError, printJson, printLine } from '../output.js';
import { withSession } from '../session.js';

interface SecretOptions {
  integration: string;
  rotate?: boolean;
  json?: boolean;
}

export function registerWebhooks(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description("manage the secret GitHub signs an integration's webhooks with");

  webhooks
    .command('secret')
    .description('generate the webhook secret of a GitHub integration (printed once, stored encrypted)')
    .requiredOption('--integration <id>', 'the integration', uuid)
    .option(
      '--rotate',
      'replace the existing secret; the previous one is accepted for SYNC_WEBHOOK_SECRET_GRACE_SECONDS',
    )
    .option('--json', 'print {"integration_id", "secret", "version", "previous_expires_at"}')
    .addHelpText(
      'after',
      `
The secret is 32 random bytes in hex. Enter it as the webhook's secret on GitHub (Settings →
Webhooks, content type application/json, payload URL <api>/api/v1/webhooks/github/<integration id>).
It is printed only now; to see a new one, rotate. After --rotate, deliveries signed with the
previous secret are still accepted for SYNC_WEBHOOK_SECRET_GRACE_SECONDS (default 3600), time to
update the webhook on GitHub.`,
    )
    .action(async (opts: SecretOptions) => {
      const created = await withSession({}, ({ engine }) =>
        engine.db.transaction(async (tx) => {
          const row = await getIntegration(tx, opts.integration, { lock: true });
          if (!row) throw new CliError(`no integration ${opts.integration}`);
          if (row.provider !== GITHUB_WEBHOOK_PROVIDER) {
            throw new CliError(
              `integration ${row.id} is a ${row.provider} integration: webhooks are received for GitHub only`,
            );
          }
          const { settings, secrets, clock } = engine.ctx;
          const target = { orgId: row.org_id, integrationId: row.id };
          const made = await createWebhookSecret(
            tx,
            secrets,
            target,
            { rotate: opts.rotate ?? false, graceMs: settings.webhookSecretGraceMs },
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
}
