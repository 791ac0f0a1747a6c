/**
 * Deterministic randomness: every value the emulator invents comes from a hash of the seed and a
 * tag, so the same seed always serves the same organisation, whatever order requests arrive in.
 */

/** 32-bit FNV-1a of `text`, then one splitmix round (well spread for short, similar tags). */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h >>> 0);
}

function mix32(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** A sequential generator (mulberry32) seeded from `seed` and `tag`. */
export class Rng {
  private state: number;
  constructor(seed: number, tag: string) {
    this.state = hash32(`${seed}:${tag}`);
  }
  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }
  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  /** `k` distinct elements (order of first draw). */
  sample<T>(items: readonly T[], k: number): T[] {
    if (k <= 0) return [];
    const copy = items.slice();
    const out: T[] = [];
    for (let i = 0; i < Math.min(k, copy.length); i++) {
      const j = i + Math.floor(this.next() * (copy.length - i));
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
      out.push(copy[i]!);
    }
    return out;
  }
}

/** `length` hex digits hashed from `key` (deterministic ids: SHAs, UUIDs). */
export function hashHex(key: string, length: number): string {
  let out = '';
  for (let i = 0; out.length < length; i++) out += hash32(`${key}:${i}`).toString(16).padStart(8, '0');
  return out.slice(0, length);
}

/** `length` characters of `alphabet` hashed from `key` (deterministic local tokens and keys). */
export function hashText(key: string, alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; out.length < length; i++) out += alphabet[hash32(`${key}:${i}`) % alphabet.length];
  return out;
}

/** A 40-hex-digit commit SHA derived from `tag` (deterministic, not a real object id). */
export function fakeSha(seed: number, tag: string): string {
  return hashHex(`${seed}:sha:${tag}`, 40);
}

/** A GitHub-looking node id (base64 of a type-prefixed id). */
export function nodeId(kind: string, id: number): string {
  return Buffer.from(`0${kind.length}:${kind}${id}`).toString('base64');
}
