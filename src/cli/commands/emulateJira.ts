/**
 * `syncrelay emulate jira`: a local Jira Cloud REST v3 + Agile API emulator (seeded site,
 * nextPageToken pagination, an enforced request budget, injectable faults, a search index that lags
 * its writes by `--search-lag`) until SIGTERM / SIGINT.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { ValidationError } from '../../errors.js';
import {
  describeJiraEmulator,
  jiraOAuthIntegration,
  parseJiraEmulatorArgs,
  startJiraEmulator,
  type JiraOAuthOptions,
} from '../../emulators/jira/index.js';
import { webhookTargetFromFlags, type WebhookFlags, type WebhookTarget } from '../../emulators/core/webhooks.js';
import { noteTokenOrigin, tokenEnvOption, tokenFromEnv } from '../emulatorToken.js';
import { CliError, printLine } from '../output.js';
import { cliLogger } from '../session.js';
import { Shutdown } from '../signals.js';

interface JiraFlags extends WebhookFlags {
  port?: string;
  host?: string;
  seed?: string;
  site?: string;
  scale?: string;
  rateLimit?: string;
  faults?: string;
  timeZone?: string;
  searchLag?: string;
  now?: string;
  flavor?: string;
  oauth?: boolean;
  tokenTtl?: string;
  tokenEnv?: string;
}

const FLAGS: readonly [keyof JiraFlags, string][] = [
  ['port', '--port'],
  ['host', '--host'],
  ['seed', '--seed'],
  ['site', '--site'],
  ['scale', '--scale'],
  ['rateLimit', '--rate-limit'],
  ['faults', '--faults'],
  ['timeZone', '--time-zone'],
  ['searchLag', '--search-lag'],
  ['now', '--now'],
  ['flavor', '--flavor'],
];

export function registerEmulateJira(emulate: Command): void {
  const jira = emulate
    .command('jira')
    .description('serve a seeded Jira Cloud site over Jira’s REST v3 and Agile APIs until SIGTERM / SIGINT')
    .option('--port <n>', 'port to listen on (0 picks a free one)', '0')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--seed <n>', 'seed of the generated site and of fault draws')
    .option('--site <name>', 'site name')
    .option('--scale <spec>', 'small | medium | bench | issues=20000,…')
    .option('--rate-limit <N/WINDOW>', 'requests per credential per window, e.g. 100/60s')
    .option('--faults <spec>', 'faults to inject, e.g. rate-limit:count=2,server-error:probability=0.05')
    .option('--time-zone <zone>', 'the API user’s time zone (JQL dates are read in it)')
    .option('--search-lag <duration>', 'how long a change takes to become visible to search, e.g. 30s (0: at once)')
    .option('--now <time>', 'where the generated history ends (default: now)')
    .option(
      '--flavor <cloud|datacenter>',
      'cloud (REST v3) or datacenter (Jira Data Center REST v2, PAT or basic auth)',
    )
    .option('--oauth', 'serve OAuth 2.0 (3LO) too: a token endpoint with rotating refresh tokens and the API gateway')
    .option('--token-ttl <seconds>', 'with --oauth: how long an access token lives (1–86400; default 3600)')
    .option('--webhook-url <url>', 'POST a signed webhook delivery of every edit to this URL')
    .option(
      '--webhook-secret-env <NAME>',
      'with --webhook-url: the signing secret is read from environment variable NAME',
    )
    .option('--webhook-redeliver <p>', 'with --webhook-url: probability a delivery is sent a second time later')
    .option('--webhook-reorder-ms <n>', 'with --webhook-url: deliveries are held this long and sent shuffled');
  tokenEnvOption(jira, 'the API token')
    .addHelpText(
      'after',
      `
Prints the site URL (use it as the integration's config.siteUrl) and an email:api_token credential
for basic auth; the API token is new at every start unless --token-env names a variable holding
it. Listening on an address that is not loopback prints a warning on stderr. With --webhook-url
every edit is also POSTed there as a signed admin-webhook delivery (X-Hub-Signature, the secret
read from --webhook-secret-env). See docs/emulators.md.`,
    )
    .action(async (flags: JiraFlags) => serveJira(flags));
}

/** The webhook target of the `--webhook-*` flags (undefined without `--webhook-url`); a bad one is a CliError. */
function webhookTarget(flags: WebhookFlags): WebhookTarget | undefined {
  try {
    return webhookTargetFromFlags(flags);
  } catch (err) {
    if (err instanceof ValidationError) throw new CliError(`webhooks: ${err.message}`);
    throw err;
  }
}

async function serveJira(flags: JiraFlags): Promise<void> {
  const webhooks = webhookTarget(flags);
  const argv = FLAGS.flatMap(([key, flag]) => (flags[key] === undefined ? [] : [`${flag}=${flags[key]}`]));
  let options;
  try {
    options = parseJiraEmulatorArgs(argv);
  } catch (err) {
    if (err instanceof ValidationError) throw new InvalidArgumentError(err.message);
    throw err;
  }
  const oauth = oauthOption(flags, options.flavor);
  if (oauth) options.oauth = oauth;
  const apiToken = tokenFromEnv(flags.tokenEnv);
  const logger = cliLogger(true);
  const shutdown = new Shutdown(logger);
  const emulator = await startJiraEmulator({ ...options, apiToken, webhooks });
  try {
    printLine(describeJiraEmulator(emulator));
    printLine(
      emulator.flavor === 'datacenter'
        ? `credential (personal access token, Bearer; or ${emulator.username}:<token> basic): ${emulator.token}`
        : `credential (email:api_token, basic auth): ${emulator.token}`,
    );
    if (emulator.oauth) {
      const signIn = jiraOAuthIntegration(emulator);
      printLine(`OAuth 2.0 config: ${JSON.stringify(signIn.config)}`);
      printLine(`OAuth 2.0 credential (refresh tokens rotate: store it once): ${signIn.credential}`);
    }
    if (webhooks) printLine(`webhooks: POSTed to ${webhooks.url}`);
    noteTokenOrigin(flags.tokenEnv);
    logger.info({ url: emulator.url, pid: process.pid }, 'jira emulator started');
    await shutdown.wait();
  } finally {
    await emulator.close();
  }
  logger.info('jira emulator stopped');
  logger.flush();
}

/** `--oauth` and `--token-ttl` as the emulator's option (Jira Cloud only); a bad value names its flag. */
function oauthOption(flags: JiraFlags, flavor: string | undefined): JiraOAuthOptions | null {
  if (!flags.oauth) {
    if (flags.tokenTtl !== undefined) throw new InvalidArgumentError('--token-ttl is for --oauth');
    return null;
  }
  if (flavor === 'datacenter') throw new InvalidArgumentError('--oauth is Jira Cloud’s: not with --flavor datacenter');
  if (flags.tokenTtl === undefined) return {};
  const ttl = Number(flags.tokenTtl);
  if (!/^\d+$/.test(flags.tokenTtl) || ttl < 1 || ttl > 86_400) {
    throw new InvalidArgumentError(`--token-ttl: expected whole seconds, 1–86400, got "${flags.tokenTtl}"`);
  }
  return { accessTokenTtlSeconds: ttl };
}
