/**
 * The engine processes of a chaos run: W worker slots, R reconciler slots and, for the partition
 * fault, one worker inside the network namespace. A killed child is replaced in its slot; a child
 * that dies on its own is replaced too and reported (an engine process should survive every fault
 * it was not killed by).
 */
import { CHILD_SETTINGS } from './options.js';
import { ChaosChild, describeExit, type Exit } from './processes.js';
import type { ChildEvent } from './protocol.js';
import type { ChaosRole } from './role.js';

export interface ClusterConfig {
  /** node, its flags and the CLI entry: `command args… chaos-role <role> …` starts a child. */
  entry: { command: string; args: string[] };
  /**
   * The database settings of a child named `name` (./database.ts `engineDbSettings`): DATABASE_URL,
   * and behind the pooler DATABASE_DIRECT_URL and SYNCRELAY_DB_POOLER. Their application_name marks
   * its connections as ours.
   */
  database: (name: string) => Record<string, string>;
  redisUrl: string;
  queuePrefix: string;
  postSync: string;
  concurrency: number;
  seed: number;
  /** Where each child's stderr goes (`<name>.log`), if anywhere. */
  logDir?: string;
  /** Settings on top of CHILD_SETTINGS (a provider run's, see `providerSettings`). */
  settings?: Readonly<Record<string, string>>;
  /** Runs a command inside the partition namespace, for the partitioned worker. */
  partitioned?: {
    wrap: (command: string, args: string[]) => { command: string; args: string[] };
    database: (name: string) => Record<string, string>;
    redisUrl: string;
  };
}

export interface UnexpectedExit {
  name: string;
  pid: number;
  exit: string;
  stderr: string;
}

/** The environment without the user's syncrelay settings; a child gets exactly ours. */
function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('DATABASE_') || k === 'REDIS_URL' || k.startsWith('SYNC_') || k.startsWith('SYNCRELAY_')) continue;
    env[k] = v;
  }
  return env;
}

export class Cluster {
  readonly workers: (ChaosChild | null)[];
  readonly reconcilers: (ChaosChild | null)[];
  partitioned: ChaosChild | null = null;
  /** Ready processes that exited without being killed: an engine must survive the faults. */
  readonly unexpectedExits: UnexpectedExit[] = [];
  /** Processes that exited while starting (e.g. a connection terminated under them): replaced. */
  readonly startFailures: UnexpectedExit[] = [];
  private readonly killing = new Set<ChaosChild>();
  private readonly all: ChaosChild[] = [];
  private spawned = 0;
  private closing = false;

  constructor(
    private readonly config: ClusterConfig,
    workers: number,
    reconcilers: number,
    private readonly onEvent: (child: ChaosChild, e: ChildEvent) => void,
  ) {
    this.workers = Array.from({ length: workers }, () => null);
    this.reconcilers = Array.from({ length: reconcilers }, () => null);
  }

  /** Starts every slot and waits until all are ready. */
  async start(withPartitioned: boolean, timeoutMs = 90_000): Promise<void> {
    this.workers.forEach((_, i) => this.spawnInSlot('worker', i));
    this.reconcilers.forEach((_, i) => this.spawnInSlot('reconciler', i));
    if (withPartitioned) this.spawnPartitioned();
    const all = [...this.workers, ...this.reconcilers, this.partitioned].filter((c): c is ChaosChild => c !== null);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`engine processes not ready after ${timeoutMs / 1000} s`)), timeoutMs);
    });
    try {
      await Promise.race([Promise.all(all.map((c) => c.ready)), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** How many processes were started (replacements included). */
  get started(): number {
    return this.all.length;
  }

  /** Every child alive right now. */
  live(): ChaosChild[] {
    return this.all.filter((c) => c.alive);
  }

  /** Worker slots that are ready and not held by a fault (the partitioned worker is not among them). */
  availableWorkers(): ChaosChild[] {
    return this.workers.filter((c): c is ChaosChild => c !== null && c.available);
  }

  availableReconcilers(): ChaosChild[] {
    return this.reconcilers.filter((c): c is ChaosChild => c !== null && c.available);
  }

  /** SIGKILLs `child` (ours, by pid), waits for it to die, and starts its replacement in the slot. */
  async killAndReplace(child: ChaosChild): Promise<Exit> {
    this.killing.add(child);
    const exit = await child.kill();
    this.replace(child);
    return exit;
  }

  private replace(child: ChaosChild): void {
    if (this.closing) return;
    if (child === this.partitioned) return this.spawnPartitioned();
    const slots = child.role === 'worker' ? this.workers : this.reconcilers;
    const i = slots.indexOf(child);
    if (i >= 0) this.spawnInSlot(child.role, i);
  }

  private spawnInSlot(role: ChaosRole, i: number): void {
    const slots = role === 'worker' ? this.workers : this.reconcilers;
    slots[i] = this.spawn(role, `${role}-${++this.spawned}`, this.config.database, this.config.redisUrl, null);
  }

  private spawnPartitioned(): void {
    const p = this.config.partitioned;
    if (!p) return;
    this.partitioned = this.spawn('worker', `netns-worker-${++this.spawned}`, p.database, p.redisUrl, p.wrap);
  }

  private spawn(
    role: ChaosRole,
    name: string,
    database: (name: string) => Record<string, string>,
    redisUrl: string,
    wrap: ((command: string, args: string[]) => { command: string; args: string[] }) | null,
  ): ChaosChild {
    const { entry } = this.config;
    const roleArgs = [
      ...entry.args,
      'chaos-role',
      role,
      '--id',
      name,
      '--concurrency',
      String(this.config.concurrency),
      '--pool',
      role === 'worker' ? String(this.config.concurrency + 3) : '4',
      '--seed',
      String(this.config.seed + this.spawned),
    ];
    const { command, args } = wrap ? wrap(entry.command, roleArgs) : { command: entry.command, args: roleArgs };
    const env = {
      ...baseEnv(),
      ...CHILD_SETTINGS,
      ...this.config.settings,
      ...database(name),
      REDIS_URL: redisUrl,
      SYNCRELAY_QUEUE_PREFIX: this.config.queuePrefix,
      SYNC_POST_SYNC_DELIVERY: this.config.postSync,
      SYNCRELAY_LOG_LEVEL: this.config.logDir ? 'warn' : 'error',
    };
    const child = new ChaosChild({ role, name, command, args, env, logDir: this.config.logDir }, this.onEvent);
    this.all.push(child);
    void child.exited.then((exit) => this.onExit(child, exit));
    return child;
  }

  private onExit(child: ChaosChild, exit: Exit): void {
    if (this.killing.has(child) || this.closing) return;
    const record = { name: child.name, pid: child.pid, exit: describeExit(exit), stderr: child.tail() };
    (child.wasReady ? this.unexpectedExits : this.startFailures).push(record);
    this.replace(child);
  }

  /** From now on exits are expected and nothing is replaced (the run is ending or interrupted). */
  beginClosing(): void {
    this.closing = true;
  }

  /** Stops every child: SIGTERM (resumed first if stopped), SIGKILL after `graceMs`. */
  async stopAll(graceMs = 5000): Promise<void> {
    this.closing = true;
    await Promise.all(this.live().map((c) => c.stop(graceMs)));
  }

  /** SIGKILLs every child at once (interrupted, or something went wrong). */
  async killAll(): Promise<void> {
    this.closing = true;
    await Promise.all(this.live().map((c) => c.kill()));
  }
}
