/**
 * A `syncrelay` long-running command (worker, reconciler) in a process of its own, as deployed: the
 * CLI transpiled with the bench's children (./compile.ts), run by plain node on the environment
 * given. Ready once its "<command> started" log line is out; stopped with SIGTERM (the graceful
 * stop), SIGKILL after a bound.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { buildChildEntry } from './compile.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OUTPUT_KEEP = 8000;
/** Folders of files that are not TypeScript, which the transpiled copy does not have. */
const ASSET_DIRS = ['migrations', 'src/providers/synthetic/migrations', 'src/dashboard/assets'];

export class CliProcess {
  readonly ready: Promise<void>;
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private output = '';
  private alive = true;

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
    this.child = spawn(process.execPath, [main, command, ...args], {
      env: { ...process.env, ...env, SYNCRELAY_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', () => ((this.alive = false), resolve())));
    let started!: () => void;
    const isStarted = new Promise<void>((resolve) => (started = resolve));
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        this.output = (this.output + line + '\n').slice(-OUTPUT_KEEP);
        if (line.includes(`${command} started`)) started();
      });
    }
    this.ready = Promise.race([
      isStarted,
      this.exited.then(() => {
        throw new Error(`syncrelay ${command} exited before it started: ${this.output}`);
      }),
    ]);
    this.ready.catch(() => undefined);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** SIGTERM (in-flight units finish or are abandoned), SIGKILL after `ms`. */
  async stop(ms = 15_000): Promise<void> {
    if (!this.alive) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.alive && this.child.kill('SIGKILL'), ms);
    await this.exited;
    clearTimeout(timer);
  }
}
