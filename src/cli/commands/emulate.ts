/**
 * `syncrelay emulate github`: a local GitHub REST API emulator (seeded organisation, GitHub's
 * pagination, authentication, primary rate limit and injectable faults) until SIGTERM / SIGINT;
 * `emulate linear` (./emulateLinear.ts) and `emulate jira` (./emulateJira.ts) beside it.
 */
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
import { intInRange, isoTime } from '../args.js';
import { registerEmulateJira } from './emulateJira.js';
import { registerEmulateLinear } from './emulateLinear.js';
import { noteTokenOrigin, tokenEnvOption, tokenFromEnv } from '../emulatorToken.js';
import { printLine } from '../output.js';
import { cliLogger } from '../session.js';
import { Shutdown } from '../signals.js';

interface EmulateFlags {
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
    .option('--churn <n>', 'edits per second made while lists are read (0: none)', churnRate, CLI_CHURN);
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
fourth repository is empty (its commit lists answer 409). See docs/emulators.md.`,
    )
    .action(async (flags: EmulateFlags) => serveGithub(flags));
  registerEmulateLinear(emulate);
  registerEmulateJira(emulate);
}

async function serveGithub(flags: EmulateFlags): Promise<void> {
  const token = tokenFromEnv(flags.tokenEnv);
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
  });
  try {
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
    noteTokenOrigin(flags.tokenEnv);
    logger.info({ url: emulator.url, pid: process.pid }, 'github emulator started');
    await shutdown.wait();
  } finally {
    await emulator.close();
  }
  logger.info('github emulator stopped');
  logger.flush();
}
