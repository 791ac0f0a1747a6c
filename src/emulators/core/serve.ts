/**
 * Listening and the controls every emulator hands its caller, whichever API it imitates: the
 * URL, `setFaults`, `mutate`, `close`. Each emulator adds its own parts (credentials, data, its
 * request log and stats) around them.
 */
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../clock.js';
import { exposureWarning, warnOnStderr } from './credentials.js';
import { FaultDeck } from './faultDeck.js';
import type { FaultRules, FaultSpecBase } from './faultSpec.js';
import { resolveCommon, type CommonEmulatorOptions, type ResolvedCommonOptions } from './options.js';
import { resolveScale, type ScaleRules } from './scale.js';

/** A server listening on `origin` (`http://127.0.0.1:<port>`, an IPv6 host in brackets). */
export interface Listening {
  origin: string;
  /** The address and port bound (a host name given is resolved). */
  address: string;
  port: number;
  /** Stops listening and drops open connections; safe to call twice. */
  close(): Promise<void>;
}

/** Listens on `host` (default 127.0.0.1) and `port` (default 0: a free one). */
export async function listen(handler: RequestListener, at: { host?: string; port?: number }): Promise<Listening> {
  const host = at.host ?? '127.0.0.1';
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port ?? 0, host, () => resolve());
  });
  const { port, address } = server.address() as AddressInfo;
  let closed: Promise<void> | null = null;
  return {
    origin: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    address,
    port,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

/** An emulator about to start: its common options resolved, its scale and its fault deck. */
export interface PreparedEmulator<S, F extends FaultSpecBase> extends ResolvedCommonOptions {
  scale: S;
  faults: FaultDeck<F>;
}

/** Resolves the common options and the `scale` option, and deals the first faults into a deck. */
export function prepareEmulator<S extends Record<keyof S, number>, F extends FaultSpecBase>(
  opts: CommonEmulatorOptions & { scale?: Partial<S> | string },
  rules: { scales: ScaleRules<S>; faults: FaultRules<F> },
  faults: readonly F[] = [],
): PreparedEmulator<S, F> {
  const common = resolveCommon(opts);
  const scale = resolveScale(opts.scale, rules.scales);
  return { ...common, scale, faults: new FaultDeck(common.seed, rules.faults, faults) };
}

/**
 * Listens with `handler` (at `opts.host` and `opts.port`) and returns the origin and the controls;
 * `change` makes the data's next round of changes at the clock's now. Bound to an address that is
 * not loopback, the `name` emulator warns in one line (to `at.warn`, by default standard error).
 */
export async function serveEmulator<F extends FaultSpecBase, M>(
  handler: RequestListener,
  at: Pick<CommonEmulatorOptions, 'host' | 'port' | 'warn'>,
  prepared: { name: string; faults: FaultDeck<F>; clock: Clock },
  change: (round: number, nowMs: number) => M,
): Promise<{ origin: string; controls: EmulatorControls<F, M> }> {
  const server = await listen(handler, at);
  const warning = exposureWarning(prepared.name, server.address, server.port);
  if (warning) (at.warn ?? warnOnStderr)(warning);
  return { origin: server.origin, controls: emulatorControls(server, prepared.faults, prepared.clock, change) };
}

/** The controls of a running emulator. */
export interface EmulatorControls<F extends FaultSpecBase, M> {
  /** Replaces the injected faults (validated first: a bad one changes nothing). */
  setFaults(faults: F[]): void;
  /** Changes some data at the clock's now, deterministically from the seed and the round. */
  mutate(): M;
  /** Stops the emulator; safe to call twice. */
  close(): Promise<void>;
}

/** The controls over a listening server, its fault deck and its data (`change` runs round 1, 2, …). */
export function emulatorControls<F extends FaultSpecBase, M>(
  server: Listening,
  faults: FaultDeck<F>,
  clock: Clock,
  change: (round: number, nowMs: number) => M,
): EmulatorControls<F, M> {
  let rounds = 0;
  return {
    setFaults: (f) => faults.set(f),
    mutate: () => change(++rounds, clock.now().getTime()),
    close: () => server.close(),
  };
}

/** What an integration reading an emulator is made of (`engine.createIntegration` fields). */
export interface EmulatedIntegration<P extends string, C> {
  provider: P;
  sources: string[];
  datasets: string[];
  config: C;
  credential: string;
}

/** An integration of `provider` reading `sources` and `datasets` through an emulator. */
export function emulatedIntegration<P extends string, C>(
  provider: P,
  config: C,
  credential: string,
  sources: string[],
  datasets: readonly string[],
): EmulatedIntegration<P, C> {
  return { provider, sources, datasets: [...datasets], config, credential };
}
