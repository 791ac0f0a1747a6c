/**
 * `syncrelay emulate linear`: a local Linear GraphQL API emulator (seeded workspace, Relay
 * pagination, leaky-bucket request, complexity and endpoint budgets, injectable faults) until
 * SIGTERM / SIGINT. As hostile as Linear by default: 2 % of issue reads answer partial data
 * (`--partial-rate 0` turns it off).
 */
import { InvalidArgumentError, type Command } from 'commander';
import { ValidationError } from '../../errors.js';
import {
  parseLinearEmulatorArgs,
  startLinearEmulator,
  type LinearEmulatorFlags,
} from '../../emulators/linear/index.js';
import { webhookTargetFromFlags, type WebhookFlags, type WebhookTarget } from '../../emulators/core/webhooks.js';
import { noteTokenOrigin, tokenEnvOption, tokenFromEnv } from '../emulatorToken.js';
import { CliError, printLine } from '../output.js';
import { cliLogger } from '../session.js';
import { Shutdown } from '../signals.js';

export function registerEmulateLinear(emulate: Command): void {
  const linear = emulate
    .command('linear')
    .description('serve a seeded Linear workspace over a GraphQL API of Linear’s shapes until SIGTERM / SIGINT')
    .option('--port <n>', 'port to listen on (0 picks a free one)', '0')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--seed <n>', 'seed of the generated workspace and of fault draws', '1')
    .option('--now <time>', 'where the generated history ends (default: now)')
    .option('--scale <spec>', 'small | medium | bench | issues=20000,teams=4,…')
    .option('--rate-limit <N/WINDOW>', 'requests per key per window, e.g. 1500/3600s')
    .option('--complexity-limit <N/WINDOW>', 'complexity points per key per window')
    .option('--max-complexity <n>', 'the most complexity one query may have')
    .option('--limit-status <code>', 'HTTP status of a RATELIMITED answer: 200, 400 or 429')
    .option('--faults <spec>', 'faults to inject, e.g. ratelimited:count=2:status=200,server-error:p=0.05')
    .option('--endpoint-limit <spec>', 'endpoint buckets by root field, e.g. issues=600/60s')
    .option('--partial-rate <p>', 'share of issue reads answered with partial data (data and errors)', '0.02')
    .option('--churn <n>', 'issue edits per second while serving (moves them in orderBy: updatedAt)')
    .option('--webhook-url <url>', 'POST a signed webhook delivery of every edit to this URL')
    .option(
      '--webhook-secret-env <NAME>',
      'with --webhook-url: the signing secret is read from environment variable NAME',
    )
    .option('--webhook-redeliver <p>', 'with --webhook-url: probability a delivery is sent a second time later')
    .option('--webhook-reorder-ms <n>', 'with --webhook-url: deliveries are held this long and sent shuffled');
  tokenEnvOption(linear, 'the personal API key')
    .addHelpText(
      'after',
      `
Prints the GraphQL endpoint (use it as the integration's config.apiUrl), a personal API key (sent
as "Authorization: <key>") and an OAuth token (sent as "Bearer <token>"), both new at every start
unless --token-env names a variable holding the API key. Listening on an address that is not
loopback prints a warning on stderr. With --webhook-url every edit is also POSTed there as a
signed webhook delivery (Linear-Signature, the secret read from --webhook-secret-env). See
docs/emulators.md.`,
    )
    .action(async (flags: LinearCliFlags) => serveLinear(flags));
}

type LinearCliFlags = LinearEmulatorFlags & WebhookFlags & { tokenEnv?: string };

/** The webhook target of the `--webhook-*` flags (undefined without `--webhook-url`); a bad one is a CliError. */
function webhookTarget(flags: WebhookFlags): WebhookTarget | undefined {
  try {
    return webhookTargetFromFlags(flags);
  } catch (err) {
    if (err instanceof ValidationError) throw new CliError(`webhooks: ${err.message}`);
    throw err;
  }
}

async function serveLinear(flags: LinearCliFlags): Promise<void> {
  const { webhookUrl, webhookSecretEnv, webhookRedeliver, webhookReorderMs, ...rest } = flags;
  const webhooks = webhookTarget({ webhookUrl, webhookSecretEnv, webhookRedeliver, webhookReorderMs });
  let options;
  try {
    options = parseLinearEmulatorArgs(rest);
  } catch (err) {
    if (err instanceof ValidationError) throw new InvalidArgumentError(err.message);
    throw err;
  }
  const token = tokenFromEnv(flags.tokenEnv);
  const logger = cliLogger(true);
  const shutdown = new Shutdown(logger);
  const emulator = await startLinearEmulator({ ...options, token, webhooks });
  try {
    printLine(
      `Linear emulator: ${emulator.url}  ·  teams: ${emulator.data.teams.map((t) => t.key).join(', ')}  ·  ` +
        `issues: ${emulator.data.issues.length}`,
    );
    printLine(`API key: ${emulator.token}`);
    printLine(`OAuth token: ${emulator.oauthToken}`);
    if (webhooks) printLine(`webhooks: POSTed to ${webhooks.url}`);
    noteTokenOrigin(flags.tokenEnv);
    logger.info({ url: emulator.url, pid: process.pid }, 'linear emulator started');
    await shutdown.wait();
  } finally {
    await emulator.close();
  }
  logger.info('linear emulator stopped');
  logger.flush();
}
