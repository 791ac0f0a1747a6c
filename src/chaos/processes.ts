/**
 * The child processes of a chaos run: spawned, followed through their stdout announcements, and
 * signalled by pid only (never by name). A child exits when its stdin ends, so none outlives us.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { formatCommand, parseChildLine, type ChildCommand, type ChildEvent } from './protocol.js';
import type { ChaosRole } from './role.js';

const STDERR_KEEP = 8000;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export type ChildState = 'starting' | 'ready' | 'stopped' | 'exited';

export interface SpawnSpec {
  role: ChaosRole;
  name: string;
  /** argv[0] and the arguments before `chaos-role` (node, its flags, the CLI entry), or a wrapper. */
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Directory to write the child's stderr (its logs) to, as `<name>.log`. */
  logDir?: string;
}

/** One child: state, the units it announced and has not finished, and its stderr tail. */
export class ChaosChild {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly ready: Promise<void>;
  readonly exited: Promise<Exit>;
  /** unit id → lease owner, for units started and not yet ended. */
  readonly inFlight = new Map<string, string>();
  /** Set while a fault holds this child (frozen, partitioned, paused): other faults leave it alone. */
  busy = false;
  state: ChildState = 'starting';
  /** It announced `ready` at some point. */
  wasReady = false;
  private stderrTail = '';
  private readonly listeners = new Set<(e: ChildEvent) => void>();

  constructor(
    readonly spec: SpawnSpec,
    onEvent: (child: ChaosChild, e: ChildEvent) => void,
  ) {
    this.child = spawn(spec.command, spec.args, { env: spec.env, stdio: ['pipe', 'pipe', 'pipe'] });
    if (this.child.pid === undefined) throw new Error(`could not start ${spec.name}`);
    this.pid = this.child.pid;
    this.child.stdin!.on('error', () => undefined);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.state = 'exited';
        resolve({ code, signal });
      }),
    );
    const log: WriteStream | null = spec.logDir ? createWriteStream(join(spec.logDir, `${spec.name}.log`)) : null;
    log?.on('error', () => undefined);
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_KEEP);
      log?.write(chunk);
    });
    this.child.stderr!.once('end', () => log?.end());
    let markReady!: () => void;
    this.ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      void this.exited.then((e) =>
        reject(new Error(`${spec.name} exited before it was ready (${describeExit(e)}): ${this.tail()}`)),
      );
    });
    this.ready.catch(() => undefined);
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const e = parseChildLine(line);
      if (!e) return;
      if (e.kind === 'ready' && this.state === 'starting') {
        this.state = 'ready';
        this.wasReady = true;
        markReady();
      }
      if (e.kind === 'unit-start') this.inFlight.set(e.unitId, e.owner);
      if (e.kind === 'unit-end') this.inFlight.delete(e.unitId);
      onEvent(this, e);
      for (const l of this.listeners) l(e);
    });
  }

  get name(): string {
    return this.spec.name;
  }

  get role(): ChaosRole {
    return this.spec.role;
  }

  get alive(): boolean {
    return this.state !== 'exited';
  }

  /** Ready, not held by a fault. */
  get available(): boolean {
    return this.state === 'ready' && !this.busy;
  }

  send(c: ChildCommand): void {
    if (this.alive && this.child.stdin?.writable) this.child.stdin.write(`${formatCommand(c)}\n`);
  }

  /** Resolves with the first event matching `pred` within `ms`, else null. */
  waitFor(pred: (e: ChildEvent) => boolean, ms: number): Promise<ChildEvent | null> {
    return new Promise((resolve) => {
      const done = (e: ChildEvent | null) => {
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(e);
      };
      const listener = (e: ChildEvent) => pred(e) && done(e);
      const timer = setTimeout(() => done(null), ms);
      this.listeners.add(listener);
      void this.exited.then(() => done(null));
    });
  }

  /** Sends `signal` to this pid (nothing else). */
  signal(sig: NodeJS.Signals): void {
    if (!this.alive) return;
    try {
      process.kill(this.pid, sig);
    } catch {
      // Already gone.
    }
    if (sig === 'SIGSTOP') this.state = 'stopped';
    if (sig === 'SIGCONT' && this.state === 'stopped') this.state = 'ready';
  }

  /** SIGKILL and wait for the exit. */
  async kill(): Promise<Exit> {
    this.signal('SIGKILL');
    return this.exited;
  }

  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs: number): Promise<Exit> {
    if (!this.alive) return this.exited;
    if (this.state === 'stopped') this.signal('SIGCONT');
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return exit;
  }

  /** The last lines of its stderr: for an uncaught error, the error and the top of its stack. */
  tail(lines = 12): string {
    return this.stderrTail
      .trim()
      .split('\n')
      .slice(-lines)
      .map((l) => l.trim())
      .join(' | ');
  }
}

export function describeExit(e: Exit): string {
  return e.signal ? `signal ${e.signal}` : `exit code ${String(e.code)}`;
}
