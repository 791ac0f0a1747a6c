/**
 * One process the benchmarks start (a bench child, an API process, a `syncrelay` command): its
 * stdout lines handed to listeners with their arrival time, the tail of its output kept for the
 * error that says why it died, a "ready" line awaited (or the exit that came first), and a stop
 * that asks gracefully and kills after a bound.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

const OUTPUT_KEEP = 8000;

export type LineListener = (line: string, at: number) => void;

export interface SpawnOptions {
  /** What the process is, for messages. */
  name: string;
  env: Record<string, string>;
  cwd?: string;
  /**
   * Its two streams as one (a process that logs): stderr's lines are handed to the listeners too,
   * and both are kept in the output tail. @default false: lines of stdout; the tail of stderr
   */
  merged?: boolean;
  /** How a graceful stop is asked: stdin ended, or SIGTERM. */
  stopBy: 'stdin' | 'SIGTERM';
}

export class Spawned {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<void>;
  private readonly listeners = new Set<LineListener>();
  private tail = '';
  private alive = true;

  constructor(
    command: string,
    args: readonly string[],
    private readonly o: SpawnOptions,
  ) {
    this.child = spawn(command, args, {
      ...(o.cwd ? { cwd: o.cwd } : {}),
      env: { ...process.env, ...o.env },
      stdio: [o.stopBy === 'stdin' ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    if (this.child.pid === undefined) throw new Error(`could not spawn the ${o.name}`);
    this.pid = this.child.pid;
    this.exited = new Promise((resolve) => this.child.once('exit', () => ((this.alive = false), resolve())));
    if (o.merged) this.lines(this.child.stderr!);
    else this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => this.keep(chunk));
    this.lines(this.child.stdout!);
  }

  /** Hands each line of `stream` to the listeners (and keeps it, when the streams are merged). */
  private lines(stream: NodeJS.ReadableStream): void {
    createInterface({ input: stream }).on('line', (line) => {
      const at = performance.now();
      if (this.o.merged) this.keep(`${line}\n`);
      for (const l of this.listeners) l(line, at);
    });
  }

  private keep(text: string): void {
    this.tail = (this.tail + text).slice(-OUTPUT_KEEP);
  }

  /** The last of its output (stderr; stdout too when merged). */
  get output(): string {
    return this.tail;
  }

  get running(): boolean {
    return this.alive;
  }

  /** Adds a stdout line listener; returns its removal. */
  on(listener: LineListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /**
   * The first stdout line for which `match` holds; rejected when the process exits first, or after
   * `timeoutMs` when given. Not awaited: no unhandled rejection.
   */
  line(match: (line: string) => boolean, timeoutMs?: number): Promise<string> {
    let off: () => void = () => undefined;
    let timer: NodeJS.Timeout | undefined;
    const found = new Promise<string>((resolve, reject) => {
      off = this.on((line) => {
        if (!match(line)) return;
        off();
        clearTimeout(timer);
        resolve(line);
      });
      if (timeoutMs !== undefined) {
        const why = () => new Error(`timed out waiting for a line from the ${this.o.name} (${this.pid}): ${this.tail}`);
        timer = setTimeout(() => (off(), reject(why())), timeoutMs);
      }
      void this.exited.then(() => {
        off();
        clearTimeout(timer);
        reject(new Error(`the ${this.o.name} exited: ${this.tail}`));
      });
    });
    found.catch(() => undefined);
    return found;
  }

  /** Writes a line to its stdin. */
  send(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  kill(signal: NodeJS.Signals): void {
    if (this.alive) this.child.kill(signal);
  }

  /** Asks it to stop (stdin ended, or SIGTERM), SIGKILL after `ms`. */
  async stop(ms: number): Promise<void> {
    if (!this.alive) return;
    if (this.o.stopBy === 'stdin') this.child.stdin!.end();
    else this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.kill('SIGKILL'), ms);
    await this.exited;
    clearTimeout(timer);
  }
}
