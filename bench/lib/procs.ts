/** Spawning bench/lib/child.ts processes and reading their one-line announcements. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { buildChildEntry } from './compile.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const STDERR_KEEP = 8000;

type LineListener = (words: string[], at: number) => void;

/** One child: lines on stdout are split into words and handed to listeners with their arrival time. */
export class ChildProc {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  private readonly listeners = new Set<LineListener>();
  private stderrTail = '';
  private alive = true;

  constructor(mode: 'worker' | 'peer', env: Record<string, string>) {
    // SYNCRELAY_BENCH_CHILD_ARGS: extra node flags for the children, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p".
    const nodeArgs = (process.env.SYNCRELAY_BENCH_CHILD_ARGS ?? '').split(/\s+/).filter(Boolean);
    this.child = spawn(process.execPath, [...nodeArgs, buildChildEntry(), mode], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    if (this.child.pid === undefined) throw new Error(`could not spawn a ${mode} process`);
    this.pid = this.child.pid;
    this.exited = new Promise((resolve) => this.child.once('exit', () => ((this.alive = false), resolve())));
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_KEEP);
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const at = performance.now();
      const words = line.trim().split(/\s+/);
      for (const l of this.listeners) l(words, at);
    });
    this.ready = new Promise((resolve, reject) => {
      const off = this.on((w) => {
        if (w[0] === 'ready') {
          off();
          resolve();
        }
      });
      void this.exited.then(() => reject(new Error(`${mode} process exited before ready: ${this.stderrTail}`)));
    });
    this.ready.catch(() => undefined);
  }

  on(listener: LineListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves with the words of the first line for which `match` holds. */
  next(match: (words: string[]) => boolean, timeoutMs = 60_000): Promise<string[]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => (off(), reject(new Error(`timed out waiting for a line from ${this.pid}: ${this.stderrTail}`))),
        timeoutMs,
      );
      const off = this.on((w) => {
        if (match(w)) {
          clearTimeout(timer);
          off();
          resolve(w);
        }
      });
    });
  }

  /** Peak and current RSS in bytes. */
  async rss(): Promise<{ peak: number; now: number }> {
    const reply = this.next((w) => w[0] === 'rss', 10_000);
    this.child.stdin!.write('rss\n');
    const w = await reply;
    return { peak: Number(w[1]), now: Number(w[2]) };
  }

  kill(signal: NodeJS.Signals): void {
    if (this.alive) this.child.kill(signal);
  }

  /** Graceful stop (stdin ends), SIGKILL after `ms`. */
  async stop(ms = 10_000): Promise<void> {
    if (!this.alive) return;
    this.child.stdin!.end();
    const timer = setTimeout(() => this.kill('SIGKILL'), ms);
    await this.exited;
    clearTimeout(timer);
  }

  get stderr(): string {
    return this.stderrTail;
  }
}

/** Starts `n` children and waits until all are ready. */
export async function startChildren(
  mode: 'worker' | 'peer',
  n: number,
  env: Record<string, string>,
): Promise<ChildProc[]> {
  const all = Array.from({ length: n }, () => new ChildProc(mode, env));
  try {
    await Promise.all(all.map((c) => c.ready));
  } catch (err) {
    await Promise.all(all.map((c) => c.stop(2000)));
    throw err;
  }
  return all;
}

export async function stopAll(children: readonly ChildProc[]): Promise<void> {
  await Promise.all(children.map((c) => c.stop()));
}
