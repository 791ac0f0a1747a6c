/** Spawning bench/lib/child.ts processes and reading their one-line announcements. */
import { fileURLToPath } from 'node:url';
import { buildChildEntry } from './compile.js';
import { Spawned } from './spawned.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

type LineListener = (words: string[], at: number) => void;

/** One child: lines on stdout are split into words and handed to listeners with their arrival time. */
export class ChildProc {
  readonly pid: number;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  private readonly proc: Spawned;

  constructor(mode: 'worker' | 'peer', env: Record<string, string>) {
    // SYNCRELAY_BENCH_CHILD_ARGS: extra node flags for the children, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p".
    const nodeArgs = (process.env.SYNCRELAY_BENCH_CHILD_ARGS ?? '').split(/\s+/).filter(Boolean);
    this.proc = new Spawned(process.execPath, [...nodeArgs, buildChildEntry(), mode], {
      name: `${mode} process`,
      env,
      cwd: ROOT,
      stopBy: 'stdin',
    });
    this.pid = this.proc.pid;
    this.exited = this.proc.exited;
    this.ready = this.proc.line((line) => words(line)[0] === 'ready').then(() => undefined);
    this.ready.catch(() => undefined);
  }

  on(listener: LineListener): () => void {
    return this.proc.on((line, at) => listener(words(line), at));
  }

  /** Resolves with the words of the first line for which `match` holds. */
  async next(match: (words: string[]) => boolean, timeoutMs = 60_000): Promise<string[]> {
    return words(await this.proc.line((line) => match(words(line)), timeoutMs));
  }

  /** Peak and current RSS in bytes. */
  async rss(): Promise<{ peak: number; now: number }> {
    const reply = this.next((w) => w[0] === 'rss', 10_000);
    this.proc.send('rss');
    const w = await reply;
    return { peak: Number(w[1]), now: Number(w[2]) };
  }

  kill(signal: NodeJS.Signals): void {
    this.proc.kill(signal);
  }

  /** Graceful stop (stdin ends), SIGKILL after `ms`. */
  stop(ms = 10_000): Promise<void> {
    return this.proc.stop(ms);
  }

  get stderr(): string {
    return this.proc.output;
  }
}

function words(line: string): string[] {
  return line.trim().split(/\s+/);
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
