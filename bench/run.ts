/**
 * `npm run bench [-- options]`: runs the scenarios against real PostgreSQL and Redis, prints one
 * JSON line per scenario on stdout, writes bench/results/latest.json and bench/results/ratios.svg.
 *
 *   --quick            small sizes (the CI smoke run)
 *   --reps <n>         repetitions per measurement (default 5, quick 1)
 *   --only <a,b>       scenarios to run: relay, e2e, latency, recovery, history, backfill, github, linear, jira,
 *                      verify, webhooks, webhookFreshness, pooler
 *   --out <dir>        where results go (default bench/results)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { renderChart } from './lib/chart.js';
import { removeBuilds } from './lib/compile.js';
import { dropStaleBenchDatabases } from './lib/pg.js';
import type { BenchOptions, Scenario, ScenarioResult } from './lib/types.js';
import { backfillScenario } from './scenarios/backfill.js';
import { e2eScenario } from './scenarios/e2e.js';
import { githubScenario } from './scenarios/github.js';
import { historyScenario } from './scenarios/history.js';
import { jiraScenario } from './scenarios/jira.js';
import { latencyScenario } from './scenarios/latency.js';
import { linearScenario } from './scenarios/linear.js';
import { poolerScenario } from './scenarios/pooler.js';
import { recoveryScenario } from './scenarios/recovery.js';
import { relayScenario } from './scenarios/relay.js';
import { verifyScenario } from './scenarios/verify.js';
import { webhookFreshnessScenario } from './scenarios/webhookFreshness.js';
import { webhooksScenario } from './scenarios/webhooks.js';

const SCENARIOS: Record<string, Scenario> = {
  relay: relayScenario,
  e2e: e2eScenario,
  latency: latencyScenario,
  recovery: recoveryScenario,
  history: historyScenario,
  backfill: backfillScenario,
  github: githubScenario,
  linear: linearScenario,
  jira: jiraScenario,
  verify: verifyScenario,
  webhooks: webhooksScenario,
  webhookFreshness: webhookFreshnessScenario,
  pooler: poolerScenario,
};

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      reps: { type: 'string' },
      only: { type: 'string' },
      out: { type: 'string', default: fileURLToPath(new URL('./results', import.meta.url)) },
    },
    strict: true,
  });
  const reps = values.reps === undefined ? (values.quick ? 1 : 5) : Number(values.reps);
  if (!Number.isInteger(reps) || reps < 1) throw new Error('--reps must be a positive integer');
  const only = values.only ? values.only.split(',').map((s) => s.trim()) : Object.keys(SCENARIOS);
  for (const name of only)
    if (!SCENARIOS[name]) throw new Error(`unknown scenario "${name}" (known: ${Object.keys(SCENARIOS).join(', ')})`);
  return { quick: values.quick, reps, only, out: values.out };
}

function machine() {
  return {
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? 'unknown',
    memory_gib: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
}

async function main(): Promise<number> {
  const args = parse(process.argv.slice(2));
  const opts: BenchOptions = {
    quick: args.quick,
    reps: args.reps,
    note: (m) => process.stderr.write(`bench: ${m}\n`),
  };
  await dropStaleBenchDatabases();
  removeBuilds();
  const started = new Date();
  const results: ScenarioResult[] = [];
  let failed = false;
  for (const name of args.only) {
    opts.note(`${name}: starting`);
    try {
      for (const r of await SCENARIOS[name]!.run(opts)) {
        results.push(r);
        process.stdout.write(`${JSON.stringify(r)}\n`);
      }
    } catch (err) {
      failed = true;
      const error = err instanceof Error ? err.message : String(err);
      process.stdout.write(`${JSON.stringify({ scenario: name, error })}\n`);
      opts.note(`${name} failed: ${err instanceof Error ? (err.stack ?? error) : error}`);
    }
  }
  removeBuilds();
  mkdirSync(args.out, { recursive: true });
  const report = {
    started_at: started.toISOString(),
    finished_at: new Date().toISOString(),
    quick: args.quick,
    reps: args.reps,
    machine: machine(),
    results,
  };
  writeFileSync(join(args.out, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(args.out, 'ratios.svg'), renderChart(report));
  opts.note(`wrote ${join(args.out, 'latest.json')} and ratios.svg`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
