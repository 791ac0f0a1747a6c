/** Spawning engine roles (test/fixtures/role.ts) as real processes, tracked so none outlives a test. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ROLE_ENTRY = fileURLToPath(new URL('../fixtures/role.ts', import.meta.url));
const STDERR_KEEP = 16_000;

export type RoleName = 'worker' | 'reconciler';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** One role process: its stdout announcements parsed, its stderr kept (tail) for failure messages. */
export class RoleProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** lease owner → unit id, from `unit <unitId> <owner>` lines. */
  readonly owners = new Map<string, string>();
  readonly ready: Promise<void>;
  readonly exited: Promise<Exit>;
  private stderrTail = '';
  private exit: Exit | null = null;

  constructor(
    readonly role: RoleName,
    readonly tag: string,
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, ['--import', 'tsx', ROLE_ENTRY, role], {
      cwd: ROOT,
      env: { ...process.env, ...env, ROLE_EXIT_ON_STDIN_END: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    if (this.child.pid === undefined) throw new Error(`could not spawn ${tag}`);
    this.pid = this.child.pid;
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_KEEP);
    });
    let markReady!: () => void;
    this.ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      void this.exited.then((e) =>
        reject(new Error(`${tag} exited before ready (${JSON.stringify(e)}): ${this.stderrTail}`)),
      );
    });
    this.ready.catch(() => undefined);
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const [word, a, b] = line.trim().split(/\s+/);
      if (word === 'ready' && Number(a) === this.pid) markReady();
      if (word === 'unit' && a && b) this.owners.set(b, a);
    });
  }

  get alive(): boolean {
    return this.exit === null;
  }

  /** Sends `signal` (to this process only) and waits for it to exit, bounded. */
  async stop(signal: NodeJS.Signals, timeoutMs = 20_000): Promise<Exit> {
    if (this.alive) this.child.kill(signal);
    return within(this.exited, timeoutMs, `${this.tag} to exit after ${signal}`);
  }

  describe(): string {
    const state = this.alive ? 'alive' : JSON.stringify(this.exit);
    return `--- ${this.tag} (pid ${this.pid}, ${state}) stderr tail:\n${this.stderrTail}`;
  }
}

/** Every role a test started; `killAll` SIGKILLs whatever is still alive (afterAll, pass or fail). */
export class RoleGroup {
  private readonly all: RoleProcess[] = [];

  constructor(private readonly env: Record<string, string>) {}

  start(role: RoleName, tag: string, env: Record<string, string> = {}): RoleProcess {
    const p = new RoleProcess(role, tag, { ...this.env, ...env });
    this.all.push(p);
    return p;
  }

  describe(): string {
    return this.all.map((p) => p.describe()).join('\n');
  }

  async killAll(): Promise<void> {
    await Promise.all(this.all.filter((p) => p.alive).map((p) => p.stop('SIGKILL', 10_000).catch(() => undefined)));
  }
}

export async function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
