/**
 * A `syncrelay` long-running command (worker, reconciler) in a process of its own, as deployed: the
 * CLI transpiled with the bench's children (./compile.ts), run by plain node on the environment
 * given. Ready once its "<command> started" log line is out; stopped with SIGTERM (the graceful
 * stop), SIGKILL after a bound.
 */
import { existsSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildChildEntry } from './compile.js';
import { Spawned } from './spawned.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Folders of files that are not TypeScript, which the transpiled copy does not have. */
const ASSET_DIRS = ['migrations', 'src/providers/synthetic/migrations', 'src/dashboard/assets'];

export class CliProcess {
  readonly ready: Promise<void>;
  private readonly proc: Spawned;

  constructor(
    readonly command: 'worker' | 'reconciler',
    args: readonly string[],
    env: Record<string, string>,
  ) {
    // child.js sits in <build>/bench/lib; the CLI in <build>/src/cli. It reads files that are not
    // code (the migrations: the schema version it expects) where the installed package has them.
    const build = join(dirname(buildChildEntry()), '..', '..');
    for (const dir of ASSET_DIRS) {
      if (!existsSync(join(build, dir))) symlinkSync(join(ROOT, dir), join(build, dir));
    }
    const main = join(build, 'src', 'cli', 'main.js');
    this.proc = new Spawned(process.execPath, [main, command, ...args], {
      name: `syncrelay ${command}`,
      env: { ...env, SYNCRELAY_LOG_LEVEL: 'info' },
      merged: true,
      stopBy: 'SIGTERM',
    });
    this.ready = this.proc.line((line) => line.includes(`${command} started`)).then(() => undefined);
    this.ready.catch(() => undefined);
  }

  get pid(): number {
    return this.proc.pid;
  }

  /** SIGTERM (in-flight units finish or are abandoned), SIGKILL after `ms`. */
  stop(ms = 15_000): Promise<void> {
    return this.proc.stop(ms);
  }
}
