/**
 * `syncrelay emulate github`: a local GitHub REST API emulator (seeded organisation, GitHub's
 * pagination, authentication, primary rate limit and injectable faults) until SIGTERM / SIGINT;
 * `emulate linear` (./emulateLinear.ts) and `emulate jira` (./emulateJira.ts) beside it.
 */
import { closeSync, fchmodSync, openSync, writeSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { ValidationError } from '../../errors.js';
import {
  CLI_CHURN,
  parseFaults,
  parseRateLimit,
  parseScale,
  startGithubEmulator,
  type EmulatorScale,
  type FaultSpec,
  type RateLimitSpec,
} from '../../emulators/github/index.js';
import { webhookTargetFromFlags, type WebhookFlags, type WebhookTarget } from '../../emulators/core/webhooks.js';
import { intInRange, isoTime } from '../args.js';
import { registerEmulateJira } from './emulateJira.js';
import { registerEmulateLinear } from './emulateLinear.js';
import { noteTokenOrigin, tokenEnvOption, tokenFromEnv } from '../emulatorToken.js';
import { CliError, printLine } from '../output.js';
import { cliLogger } from '../session.js';
import { Shutdown } from '../signals.js';

interface EmulateFlags extends WebhookFlags {
  port: number;
  host: string;
  seed: number;
  org: string;
  now?: Date;
  rateLimit?: RateLimitSpec;
  faults?: FaultSpec[];
  scale?: EmulatorScale;
  churn: number;
  tokenEnv?: string;
  app?: boolean;
  tokenTtl?: number;
  appKeyFile?: string;
}

/** `--churn`: edits per second, a number from 0 on. */
function churnRate(raw: string): number {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n < 0) {
    throw new InvalidArgumentError(`expected edits per second ≥ 0, got "${raw}"`);
  }
  return n;
}

/** Wraps a parser that throws ValidationError into one Commander reports as an invalid argument. */
function parsed<T>(parse: (raw: string) => T): (raw: string) => T {
  return (raw) => {
    try {
      return parse(raw);
    } catch (err) {
      if (err instanceof ValidationError) throw new InvalidArgumentError(err.message);
      throw err;
    }
  };
}

export function registerEmulate(program: Command): void {
  const emulate = program
    .command('emulate')
    .description('serve local emulators of the providers’ APIs')
    .addHelpText(
      'after',
      `
The emulators speak plain http: an engine whose integrations read one on 127.0.0.1 (or localhost)
runs with SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS=true (see docs/operations.md).`,
    );
  const github = emulate
    .command('github')
    .description('serve a seeded GitHub organisation over the GitHub REST API until SIGTERM / SIGINT')
    .option('--port <n>', 'port to listen on (0 picks a free one)', intInRange(0, 65535), 0)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--seed <n>', 'seed of the generated organisation and of fault draws', intInRange(0, 2 ** 31 - 1), 1)
    .option('--org <login>', 'organisation login', 'emulated-org')
    .option('--now <time>', 'where the generated history ends (default: now)', isoTime)
    .option(
      '--rate-limit <R/WINDOW>',
      'requests per token per window, e.g. 5000/3600s, 100/10s, 100/10s:429',
      parsed(parseRateLimit),
    )
    .option(
      '--faults <spec>',
      'faults to inject, e.g. secondary-limit:count=2:retryAfter=3,server-error:p=0.05',
      parsed(parseFaults),
    )
    .option('--scale <spec>', 'small | medium | bench | issues=20000,pulls=5000,…', parsed(parseScale))
    .option('--churn <n>', 'edits per second made while lists are read (0: none)', churnRate, CLI_CHURN)
    .option('--app', 'also serve a GitHub App installed on the organisation (needs --app-key-file)')
    .option('--app-key-file <path>', "with --app: write the App's private key (PEM) to this file, mode 0600")
    .option(
      '--token-ttl <seconds>',
      "with --app: how long installation access tokens last (default: 3600, GitHub's one hour)",
      intInRange(1, 86_400),
    )
    .option('--webhook-url <url>', 'POST a signed webhook delivery of every edit to this URL')
    .option(
      '--webhook-secret-env <NAME>',
      'with --webhook-url: the signing secret is read from environment variable NAME',
    )
    .option('--webhook-redeliver <p>', 'with --webhook-url: probability a delivery is sent a second time later')
    .option('--webhook-reorder-ms <n>', 'with --webhook-url: deliveries are held this long and sent shuffled');
  tokenEnvOption(github, 'the full-access token')
    .addHelpText(
      'after',
      `
Prints the API root (use it as the client's base URL) and two local tokens: one reading every
repository, one reading public repositories only, both new at every start unless --token-env names
a variable holding the first. Send them as "Authorization: token <t>" or "Bearer <t>". Listening
on an address that is not loopback (--host 0.0.0.0) prints a warning on stderr. Fault kinds:
primary-limit, secondary-limit, too-many-requests, bad-credentials, forbidden, not-found,
server-error (status=500|502|503|504), slow (delay=ms); each with p=<0..1> or count=<n>, and
path=<text> to match only some paths. --churn makes that many edits per second while lists are
read (new comments, edited comments, closed and deleted issues), as people do on GitHub; every
fourth repository is empty (its commit lists answer 409). With --app it also serves a GitHub App
with one installation on the organisation (all repositories): it prints the App id and the
installation id and writes the App's private key (PKCS#1 PEM, made at every start) to
--app-key-file, never to the terminal. Sign an RS256 JWT with it (iss: the App id) for the /app
endpoints, exchange it at POST /app/installations/<id>/access_tokens for a ghs_ token, and read
with that. With --webhook-url every edit is also POSTed there as a signed webhook delivery
(X-Hub-Signature-256, the secret read from --webhook-secret-env). See docs/emulators.md.`,
    )
    .action(async (flags: EmulateFlags) => serveGithub(flags));
  registerEmulateLinear(emulate);
  registerEmulateJira(emulate);
}

/** The `app` option from --app, --token-ttl and --app-key-file (the last two only with --app). */
function appFlags(flags: EmulateFlags): { appId?: number; tokenTtlSeconds?: number } | undefined {
  if (!flags.app) {
    if (flags.tokenTtl !== undefined || flags.appKeyFile !== undefined) {
      throw new CliError('--token-ttl and --app-key-file are for --app only');
    }
    return undefined;
  }
  if (flags.appKeyFile === undefined || flags.appKeyFile.trim() === '') {
    throw new CliError('--app needs --app-key-file <path>: the private key is written there, never printed');
  }
  return flags.tokenTtl === undefined ? {} : { tokenTtlSeconds: flags.tokenTtl };
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

/** Writes `pem` to `path` readable by its owner only (an existing file is narrowed to 0600 first). */
function writeKeyFile(path: string, pem: string): void {
  const fd = openSync(path, 'w', 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, pem);
  } finally {
    closeSync(fd);
  }
}

async function serveGithub(flags: EmulateFlags): Promise<void> {
  const token = tokenFromEnv(flags.tokenEnv);
  const app = appFlags(flags);
  const webhooks = webhookTarget(flags);
  const logger = cliLogger(true);
  const shutdown = new Shutdown(logger);
  const emulator = await startGithubEmulator({
    token,
    port: flags.port,
    host: flags.host,
    seed: flags.seed,
    org: flags.org,
    now: flags.now,
    rateLimit: flags.rateLimit,
    faults: flags.faults,
    scale: flags.scale,
    churn: flags.churn,
    app,
    webhooks,
  });
  try {
    if (app && flags.appKeyFile !== undefined) writeKeyFile(flags.appKeyFile, emulator.appPrivateKeyPem ?? '');
    const counts = emulator.data.repos.reduce(
      (acc, r) => {
        for (const i of r.items) acc[i.pull ? 'pulls' : 'issues']++;
        return acc;
      },
      { issues: 0, pulls: 0 },
    );
    printLine(
      `GitHub emulator: ${emulator.url}  ·  org: ${emulator.data.org.login}  ·  repositories: ` +
        `${emulator.data.repos.length}  ·  issues: ${counts.issues}  ·  pull requests: ${counts.pulls}`,
    );
    for (const t of emulator.tokens) {
      printLine(`token ${t.id} (${t.repos ? 'public repositories only' : 'every repository'}): ${t.token}`);
    }
    if (app) {
      printLine(`GitHub App id: ${emulator.appId ?? ''}  ·  installation id: ${emulator.installationId ?? ''}`);
      printLine(`GitHub App private key (PKCS#1 PEM, new at every start): written to ${flags.appKeyFile ?? ''}`);
    }
    if (webhooks) printLine(`webhooks: POSTed to ${webhooks.url}`);
    noteTokenOrigin(flags.tokenEnv);
    logger.info({ url: emulator.url, pid: process.pid }, 'github emulator started');
    await shutdown.wait();
  } finally {
    await emulator.close();
  }
  logger.info('github emulator stopped');
  logger.flush();
}
