/** The webhook benchmark's API process (./webhooksApi.ts), spawned as plain node like the workers. */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { buildChildEntry } from './compile.js';
import type { TxStats } from './webhooksApi.js';

const STDERR_KEEP = 8000;

export class WebhookApiProcess {
  readonly url: Promise<string>;
  private readonly child: ChildProcess;
  private readonly waiting: ((line: string) => void)[] = [];
  private stderrTail = '';
  private readonly exited: Promise<void>;

  constructor(env: Record<string, string>) {
    const entry = join(dirname(buildChildEntry()), 'webhooksApi.js');
    this.child = spawn(process.execPath, [entry], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    this.child.stderr!.setEncoding('utf8').on('data', (c: string) => {
      this.stderrTail = (this.stderrTail + c).slice(-STDERR_KEEP);
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => this.waiting.shift()?.(line));
    this.url = Promise.race([
      this.nextLine().then((line) => {
        const [word, , url] = line.trim().split(/\s+/);
        if (word !== 'ready' || !url) throw new Error(`unexpected line from the API process: ${line}`);
        return url;
      }),
      this.exited.then(() => {
        throw new Error(`the API process exited before it was ready: ${this.stderrTail}`);
      }),
    ]);
    this.url.catch(() => undefined);
  }

  private nextLine(): Promise<string> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** The transactions timed since the last call. */
  async stats(): Promise<TxStats> {
    const line = this.nextLine();
    this.child.stdin!.write('stats\n');
    const text = await line;
    if (!text.startsWith('stats ')) throw new Error(`unexpected line from the API process: ${text}`);
    return JSON.parse(text.slice(6)) as TxStats;
  }

  /** Graceful stop (stdin ends), SIGKILL after `ms`. */
  async stop(ms = 10_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ms);
    await this.exited;
    clearTimeout(timer);
  }
}
