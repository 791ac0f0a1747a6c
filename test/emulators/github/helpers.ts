/** Requests against a running GitHub emulator, and GitHub's Link header parsed; emulators on a manual clock. */
import { afterEach } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import {
  startGithubEmulator,
  type GithubEmulator,
  type GithubEmulatorOptions,
} from '../../../src/emulators/github/index.js';

/**
 * Starts emulators on a ManualClock at `start` (seeded, scaled, with `base` options), each closed
 * after every test of the file that calls this (at its top level).
 */
export function clockedEmulators(start: number, base: GithubEmulatorOptions) {
  let open: GithubEmulator[] = [];
  afterEach(async () => {
    await Promise.all(open.map((e) => e.close()));
    open = [];
  });
  return async (opts: GithubEmulatorOptions = {}): Promise<{ e: GithubEmulator; clock: ManualClock }> => {
    const clock = new ManualClock(start);
    const e = await startGithubEmulator({ clock, now: new Date(start), ...base, ...opts });
    open.push(e);
    return { e, clock };
  };
}

/** A parsed JSON body (tests poke at it freely). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface Got {
  status: number;
  headers: Headers;
  body: Json;
  text: string;
}

/** GET `path` (or an absolute URL) with `token` (default: the emulator's full-access one; null: none). */
export async function get(
  emulator: GithubEmulator,
  path: string,
  token: string | null = emulator.token,
  headers: Record<string, string> = {},
): Promise<Got> {
  const url = path.startsWith('http') ? path : `${emulator.url}${path}`;
  const res = await fetch(url, { headers: { ...(token ? { authorization: `token ${token}` } : {}), ...headers } });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** `<url>; rel="x", …` → { x: url }, in header order. */
export function parseLink(header: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(',')) {
    const m = /<([^>]+)>;\s*rel="([^"]+)"/.exec(part.trim());
    if (m) out[m[2]!] = m[1]!;
  }
  return out;
}

/** Every page, following rel="next"; returns the items and how many pages it took. */
export async function getAll(emulator: GithubEmulator, path: string): Promise<{ items: Json[]; pages: Got[] }> {
  const items: Json[] = [];
  const pages: Got[] = [];
  let next: string | undefined = path;
  while (next) {
    const page = await get(emulator, next);
    if (page.status !== 200) throw new Error(`GET ${next}: ${page.status} ${page.text}`);
    pages.push(page);
    items.push(...(page.body as Json[]));
    next = parseLink(page.headers.get('link')).next;
  }
  return { items, pages };
}

/** Epoch ms of a GitHub timestamp. */
export function ms(iso: string): number {
  return Date.parse(iso);
}
