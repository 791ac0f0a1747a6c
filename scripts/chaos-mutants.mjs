// `npm run chaos:mutants`: proves the bounded chaos run can fail. Each mutant breaks one guarantee
// of the engine with a small textual replacement (whose target must be found exactly once: if the
// code moved, the script stops and says which target is gone), in a temporary copy of the
// repository (src, test, migrations and package files copied, node_modules symlinked); the chaos
// run there, with the flags that make that break observable, must exit non-zero naming the
// expected invariant. The unbroken copy runs once and must pass. Prints a summary table; exits 0
// only if every break was caught and the unbroken copy passed.
//
//   npm run chaos:mutants [-- --only fencing-off,ledger-off] [--seed N] [--keep] [--dry-run]
//
// --keep leaves the patched copies behind; --dry-run only checks every target and makes the copies.
//
// Needs what `syncrelay chaos` needs: DATABASE_URL (PostgreSQL, default postgres://postgres@127.0.0.1:5432/postgres)
// and REDIS_URL (default redis://127.0.0.1:6379), and `ip netns` (root or CAP_NET_ADMIN) for the
// net-partition fault that exposes fencing-off. Runs one chaos run at a time.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const COPIED = [
  'src',
  'test',
  'migrations',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.test.json',
];

/**
 * A bounded run: small enough to repeat six times, large enough for every break to show. The
 * recovery bound gets 60 s of slack: on a loaded machine the queued work alone can pass the
 * default 20 s, and what this check is after is the safety invariants (test/chaos/chaos.test.ts
 * holds the engine to the default bound).
 */
const BASE_ARGS = [
  ...['--runs', '12', '--units-per-run', '20', '--duration', '30'],
  ...['--workers', '3', '--reconcilers', '2', '--slack', '60'],
];

/** The six breaks: where, what is replaced by what, the flags that expose it, and who must see it. */
const MUTANTS = [
  {
    name: 'fencing-off',
    what: "the sink's lease check is a no-op",
    file: 'src/sinks/postgres.ts',
    find: 'await guard.assertHeldIn(tx);',
    replace: 'void tx; /* mutant: fencing off */',
    // A partitioned worker's writes wait in the network and arrive after its lease was taken over;
    // a frozen one writes late only when it was stopped in the provider's short wait before writing.
    flags: ['--faults', 'net-partition,worker-freeze'],
    expect: 'no_fenced_out_writes',
  },
  {
    name: 'claim-cas-weakened',
    what: 'a running unit can be claimed again',
    file: 'src/store/units.ts',
    find: 'AND u.id = c.id AND u.status ${CLAIM.from}',
    replace: 'AND u.id = c.id AND (u.status ${CLAIM.from} OR u.status = ${CLAIM.to})',
    flags: ['--faults', 'duplicate-delivery'],
    expect: 'no_overlapping_live_leases',
  },
  {
    name: 'receipts-ignored',
    what: 'exactly-once post_sync runs its handler whether or not the receipt was new',
    file: 'src/tasks/postSync.ts',
    find: '(await claim(tx)) && (await run(tx), true)',
    replace: '(await claim(tx), true) && (await run(tx), true)',
    // Smaller runs end while the faults go on, so their post_sync messages meet the duplicates.
    flags: ['--post-sync', 'exactly-once', '--faults', 'duplicate-delivery', '--runs', '16', '--units-per-run', '6'],
    expect: 'post_sync_exactly_once',
  },
  {
    name: 'post-sync-published-before-marked',
    what: 'at-most-once post_sync is published while claimed, before any mark',
    file: 'src/reconciler/relay.ts',
    find: "if (row.kind === 'post_sync') (atMostOncePostSync ? postSyncFirst : publish).push(row);",
    replace: "if (row.kind === 'post_sync') publish.push(row);",
    flags: ['--post-sync', 'at-most-once', '--faults', 'duplicate-delivery'],
    expect: 'post_sync_marked_before_publish',
  },
  {
    name: 'ledger-off',
    what: 'finalize arms post_sync without inserting the ledger row',
    file: 'src/tasks/finalizeSyncRun.ts',
    find: "if (await insertLedgerRow(tx, run.org_id, runId, 'post_sync', now)) {",
    replace: 'if (true) {',
    flags: ['--faults', 'worker-kill'],
    expect: 'post_sync_ledger_once',
  },
  {
    name: 'reader-page-numbers',
    what: "GitHub's issue, pull request and comment lists read by page number again, not by keyset on updated_at",
    file: 'src/providers/github/pages.ts',
    find: 'if (last && (since === null || last.getTime() > since.getTime())) {',
    replace: 'if (last && since === null) {',
    // An issue edited behind the reader moves to the end of the list: the one at the page boundary
    // shifts onto the page already read and is never read, and the later incrementals and the final
    // one read only from the watermark on. What would read it again is left out: random edits
    // (--edits-per-second 0: over a run they touch most issues, and an edited issue is read by the
    // next incremental), full re-syncs (--modes incremental) and runs crowding the first read (four
    // runs, one every 7.5 s: two full reads at once skip different issues, their union has all).
    flags: [
      ...['--provider', 'github', '--edits-per-second', '0', '--modes', 'incremental'],
      ...['--runs', '4', '--duration', '40', '--faults', 'worker-kill,duplicate-delivery'],
    ],
    expect: 'store_equals_ground_truth',
  },
];

const BASELINE = {
  name: 'unbroken',
  what: 'the engine as it is',
  flags: [
    ...['--post-sync', 'at-most-once'],
    ...['--faults', 'duplicate-delivery,net-partition,worker-freeze,worker-kill,reconciler-kill'],
  ],
};

function parseArgs(argv) {
  const out = { only: null, seed: 20_260_301, keep: false, dryRun: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--only') out.only = argv[++i].split(',');
    else if (a === '--seed') out.seed = Number(argv[++i]);
    else if (a === '--keep') out.keep = true;
    else if (a === '--dry-run') out.dryRun = true;
    else throw new Error(`unknown argument ${a} (expected --only LIST, --seed N, --keep, --dry-run)`);
  }
  if (!Number.isInteger(out.seed)) throw new Error('--seed must be an integer');
  for (const n of out.only ?? []) {
    if (!MUTANTS.some((m) => m.name === n)) throw new Error(`--only: no mutant "${n}" (${MUTANTS.map((m) => m.name)})`);
  }
  return out;
}

/** The patched text, or an error naming the file and the target when it is not there exactly once. */
function patched(text, m) {
  const n = text.split(m.find).length - 1;
  if (n !== 1) {
    throw new Error(
      `mutant ${m.name}: target ${n === 0 ? 'not found' : `found ${n} times`} in ${m.file} — the code moved; ` +
        `update scripts/chaos-mutants.mjs\n  target: ${m.find}`,
    );
  }
  return text.replace(m.find, () => m.replace);
}

function makeCopy(base, name) {
  const dir = join(base, name);
  mkdirSync(dir);
  for (const p of COPIED) cpSync(join(ROOT, p), join(dir, p), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

/** Runs `syncrelay chaos --json` in `dir`; resolves with its exit code, report (if any) and stderr's tail. */
function chaos(dir, flags, seed, logFile) {
  const args = [
    '--import',
    'tsx',
    'src/cli/main.ts',
    'chaos',
    ...BASE_ARGS,
    ...flags,
    '--seed',
    String(seed),
    '--json',
  ];
  const env = {
    ...process.env,
    DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    // A chaos run ends on its own; this only guards against a hung one (SIGTERM lets it clean up).
    const timer = setTimeout(() => child.kill('SIGTERM'), 15 * 60_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      writeFileSync(logFile, `$ node ${args.join(' ')}\n${stderr}\n--- stdout ---\n${stdout}`);
      let report = null;
      try {
        report = JSON.parse(stdout);
      } catch {
        report = null;
      }
      resolve({ code: code ?? (signal ? `signal ${signal}` : '?'), report, tail: stderr.split('\n').slice(-6) });
    });
  });
}

const failedIds = (r) => (r.report?.invariants ?? []).filter((i) => !i.ok).map((i) => i.id);

function table(rows) {
  const head = ['variant', 'break', 'expected to fail', 'exit', 'failed invariants', 'verdict', 'time'];
  const cells = rows.map((r) => [r.name, r.what, r.expect ?? '(none)', String(r.code), r.failed, r.verdict, r.time]);
  const width = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => `| ${c.map((x, i) => x.padEnd(width[i])).join(' | ')} |`;
  return [line(head), `|${width.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)].join('\n');
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const mutants = MUTANTS.filter((m) => !opts.only || opts.only.includes(m.name));
  // Every target is checked before anything runs: a moved target fails at once.
  for (const m of mutants) patched(readFileSync(join(ROOT, m.file), 'utf8'), m);
  const base = mkdtempSync(join(tmpdir(), 'syncrelay-mutants-'));
  console.log(`chaos:mutants — seed ${opts.seed}; each run's log in ${base}/<variant>.log`);
  const rows = [];
  for (const v of [BASELINE, ...mutants]) {
    const dir = makeCopy(base, v.name);
    if (v.file) writeFileSync(join(dir, v.file), patched(readFileSync(join(dir, v.file), 'utf8'), v));
    if (opts.dryRun) {
      console.log(`${v.name}: copy made${v.file ? `, ${v.file} patched` : ''}`);
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    const started = Date.now();
    console.log(`[${new Date().toISOString().slice(11, 19)}] ${v.name}: ${v.what} — chaos ${v.flags.join(' ')}`);
    const r = await chaos(dir, v.flags, opts.seed, join(base, `${v.name}.log`));
    const failed = failedIds(r);
    const caught = v.expect
      ? r.code !== 0 && failed.includes(v.expect)
      : r.code === 0 && r.report?.ok === true && failed.length === 0;
    const verdict = v.expect ? (caught ? 'CAUGHT' : 'MISSED') : caught ? 'PASS' : 'FAIL';
    const time = `${Math.round((Date.now() - started) / 1000)} s`;
    rows.push({ ...v, code: r.code, failed: failed.join(', ') || '-', verdict, ok: caught, time });
    console.log(`  → exit ${r.code}, failed: ${failed.join(', ') || 'none'} — ${verdict} (${time})`);
    if (!r.report) console.log(`  no report; stderr ended:\n    ${r.tail.join('\n    ')}`);
    if (!opts.keep) rmSync(dir, { recursive: true, force: true });
  }
  if (opts.dryRun) {
    rmSync(base, { recursive: true, force: true });
    return;
  }
  console.log(`\n${table(rows)}\n`);
  const bad = rows.filter((r) => !r.ok);
  if (bad.length > 0) {
    console.log(`chaos:mutants: FAIL — ${bad.map((r) => `${r.name} ${r.verdict}`).join(', ')}`);
    process.exitCode = 1;
  } else {
    console.log(`chaos:mutants: PASS — ${mutants.length} of ${mutants.length} breaks caught, the unbroken copy passes`);
  }
}

main().catch((err) => {
  console.error(`chaos:mutants: ${err.message}`);
  process.exitCode = 2;
});
