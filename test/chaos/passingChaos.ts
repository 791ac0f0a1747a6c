/** A bounded `syncrelay chaos … --json` run as a child process, held to exit 0 with every invariant holding. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { expect } from 'vitest';
import type { ChaosReport } from '../../src/chaos/report.js';
import { runCli } from '../cli/helpers.js';

/**
 * Runs `syncrelay <args>` (args start with `chaos` and hold `--json`) and returns its report; fails
 * unless it exits 0 with no invariant violated, naming the command, stderr's tail, the failed
 * invariants and what `more` adds from the report.
 */
export async function passingChaos(
  args: string[],
  run: { env: Record<string, string>; timeoutMs: number },
  more: (report: ChaosReport | null) => string = () => '',
): Promise<ChaosReport> {
  const r = await runCli(args, run);
  const report = (() => {
    try {
      return JSON.parse(r.stdout) as ChaosReport;
    } catch {
      return null;
    }
  })();
  const failed = report?.invariants.filter((i) => !i.ok) ?? [];
  expect(
    { code: r.code, signal: r.signal, failed },
    `syncrelay ${args.join(' ')}\n${r.stderr.slice(-4000)}\n${JSON.stringify(failed, null, 2)}\n${more(report)}`,
  ).toEqual({ code: 0, signal: null, failed: [] });
  return report!;
}

/** The redis-server binary a chaos run can start privately (`--redis-server`), or null. */
export function redisServerBinary(): string | null {
  for (const p of ['/usr/bin/redis-server', '/usr/local/bin/redis-server']) if (existsSync(p)) return p;
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}
