/** `syncrelay bench`: runs the benchmark suite (bench/run.ts) in a child process. */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { intInRange } from '../args.js';
import { CliError } from '../output.js';

/** The project root, two levels above this file's folder in src/cli/commands and dist/cli/commands. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const RUNNER = fileURLToPath(new URL('../../../bench/run.ts', import.meta.url));

export function registerBench(program: Command): void {
  program
    .command('bench')
    .description('run the benchmarks against real PostgreSQL and Redis: one JSON line per scenario')
    .option('--quick', 'small sizes: every scenario completes quickly (the CI smoke run)')
    .option('--reps <n>', 'repetitions of each measurement (default 5, quick 1)', intInRange(1, 100))
    .option(
      '--only <names>',
      'comma-separated scenarios: relay, e2e, latency, recovery, history, backfill, github, linear, jira',
    )
    .option('--out <dir>', 'where latest.json and ratios.svg go (default bench/results)')
    .addHelpText(
      'after',
      `
Needs a source checkout (bench/ and the dev dependencies: tsx, graphile-worker), a PostgreSQL
server (SYNCRELAY_BENCH_PG, default postgres://postgres@127.0.0.1:5432; the bench creates and drops
its own databases) and Redis (SYNCRELAY_BENCH_REDIS, default redis://127.0.0.1:6379).
Figures and how to read them: docs/performance.md. Same as \`npm run bench -- [options]\`.`,
    )
    .action(async (opts: { quick?: boolean; reps?: number; only?: string; out?: string }) => {
      if (!existsSync(RUNNER)) throw new CliError(`syncrelay bench needs a source checkout: ${RUNNER} is missing`);
      const args = [
        ...(opts.quick ? ['--quick'] : []),
        ...(opts.reps !== undefined ? ['--reps', String(opts.reps)] : []),
        ...(opts.only ? ['--only', opts.only] : []),
        ...(opts.out ? ['--out', opts.out] : []),
      ];
      const code = await new Promise<number>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', RUNNER, ...args], { cwd: ROOT, stdio: 'inherit' });
        child.once('error', reject);
        child.once('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
      });
      if (code !== 0) throw new CliError(`bench failed (exit status ${code})`, code);
    });
}
