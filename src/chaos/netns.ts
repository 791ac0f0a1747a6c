/**
 * The network-partition fault: one worker runs in a network namespace this command creates, joined
 * to the host by a veth pair on a private 10.x/30. It reaches PostgreSQL and Redis only through TCP
 * forwarders this process listens with on the host end of the pair; a partition takes that end of
 * the link down (packets are dropped, connections hang, nothing is reset) and healing brings it up.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { promisify } from 'node:util';

const run = promisify(execFile);

async function ip(...args: string[]): Promise<string> {
  const { stdout } = await run('ip', args, { timeout: 10_000 });
  return stdout;
}

/** Whether this process may create network namespaces; the reason when it may not. */
export async function probeNetns(): Promise<{ ok: true } | { ok: false; reason: string }> {
  const name = `srchaos-probe-${process.pid}`;
  try {
    await ip('netns', 'add', name);
  } catch (err) {
    const text = (err as { stderr?: string }).stderr?.trim() || (err as Error).message;
    return { ok: false, reason: `ip netns is not permitted here (${text.split('\n')[0] ?? ''})` };
  }
  await ip('netns', 'del', name).catch(() => undefined);
  return { ok: true };
}

/**
 * Namespaces an earlier chaos run created and could not remove (it was killed): named
 * `srchaos-<its pid>-<tag>`, removed when that pid is gone (their veth pair goes with them).
 */
export async function removeStaleNamespaces(): Promise<string[]> {
  const removed: string[] = [];
  for (const line of (await ip('netns', 'list').catch(() => '')).split('\n')) {
    const m = /^(srchaos-(\d+)-[0-9a-f]{6})\b/.exec(line.trim());
    if (!m || pidAlive(Number(m[2]))) continue;
    await ip('netns', 'del', m[1]!).then(
      () => removed.push(m[1]!),
      () => undefined,
    );
  }
  return removed;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Forwards every connection accepted on `host:port` to `target`; `sockets` are ended on close. */
class TcpForwarder {
  private readonly sockets = new Set<Socket>();
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static start(host: string, target: { host: string; port: number }): Promise<TcpForwarder> {
    let self: TcpForwarder | undefined;
    const server = createServer((client) => {
      const upstream = connect(target.port, target.host);
      for (const s of [client, upstream]) {
        self?.sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => {
          self?.sockets.delete(s);
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => {
        const address = server.address();
        self = new TcpForwarder(server, typeof address === 'object' && address ? address.port : 0);
        resolve(self);
      });
    });
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

export interface Endpoint {
  host: string;
  port: number;
}

/** A namespace, its veth pair and the forwarders; `close()` removes all of it. */
export class PartitionableNetwork {
  private partitioned = false;

  private constructor(
    readonly ns: string,
    private readonly hostVeth: string,
    readonly hostAddress: string,
    private readonly forwarders: TcpForwarder[],
  ) {}

  /** Creates the namespace and the link, and forwards to each of `targets` (same order in `ports`). */
  static async create(targets: Endpoint[]): Promise<{ net: PartitionableNetwork; ports: number[] }> {
    const tag = randomBytes(3).toString('hex');
    const ns = `srchaos-${process.pid}-${tag}`;
    const hostVeth = `src${tag}h`;
    const nsVeth = `src${tag}n`;
    const subnet = await freeSubnet();
    const net = new PartitionableNetwork(ns, hostVeth, `${subnet}.1`, []);
    try {
      await ip('netns', 'add', ns);
      await ip('link', 'add', hostVeth, 'type', 'veth', 'peer', 'name', nsVeth);
      await ip('link', 'set', nsVeth, 'netns', ns);
      await ip('addr', 'add', `${subnet}.1/30`, 'dev', hostVeth);
      await ip('link', 'set', hostVeth, 'up');
      await ip('netns', 'exec', ns, 'ip', 'addr', 'add', `${subnet}.2/30`, 'dev', nsVeth);
      await ip('netns', 'exec', ns, 'ip', 'link', 'set', nsVeth, 'up');
      await ip('netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up');
      for (const t of targets) net.forwarders.push(await TcpForwarder.start(net.hostAddress, t));
    } catch (err) {
      await net.close();
      throw err;
    }
    return { net, ports: net.forwarders.map((f) => f.port) };
  }

  /** The command prefix that runs a program inside the namespace. */
  wrap(command: string, args: string[]): { command: string; args: string[] } {
    return { command: 'ip', args: ['netns', 'exec', this.ns, command, ...args] };
  }

  /** Cuts the link: in-flight and new connections hang until `heal()`. */
  async partition(): Promise<void> {
    await ip('link', 'set', this.hostVeth, 'down');
    this.partitioned = true;
  }

  async heal(): Promise<void> {
    await ip('link', 'set', this.hostVeth, 'up');
    this.partitioned = false;
  }

  get isPartitioned(): boolean {
    return this.partitioned;
  }

  async close(): Promise<void> {
    await Promise.all(this.forwarders.map((f) => f.close().catch(() => undefined)));
    await ip('netns', 'del', this.ns).catch(() => undefined); // takes the namespace end of the pair with it
    await ip('link', 'del', this.hostVeth).catch(() => undefined);
  }
}

/** A 10.x.y.0/30 (as `10.x.y`) that no address or route of the host overlaps. */
async function freeSubnet(): Promise<string> {
  const used = `${await ip('-4', 'route', 'show', 'table', 'all')}\n${await ip('-4', 'addr')}`;
  const inUse = (a: number, b: number) =>
    new RegExp(`\\b10\\.${a}\\.${b}\\.|\\b10\\.${a}\\.0\\.0/(8|9|1[0-6])\\b|\\b10\\.0\\.0\\.0/8\\b`).test(used);
  for (let i = 0; i < 50; i++) {
    const a = 200 + Math.floor(Math.random() * 50);
    const b = Math.floor(Math.random() * 256);
    if (!inUse(a, b)) return `10.${a}.${b}`;
  }
  throw new Error('no free 10.x.y.0/30 subnet for the partition namespace');
}
