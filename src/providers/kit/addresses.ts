/**
 * IP addresses as the outbound policy (outbound.ts) sees them: what kind an address is, and whether
 * it lies in one of the operator's CIDR blocks. An IPv6 address that carries an IPv4 one (mapped
 * `::ffff:a.b.c.d`, translated `::ffff:0:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`)
 * is judged as that IPv4 address, in every notation (`::ffff:7f00:1` is `127.0.0.1`).
 */
import { isIPv4, isIPv6 } from 'node:net';

/** What an address is; only `public` ones are reached without the operator's leave. */
export type AddressKind = 'public' | 'loopback' | 'private' | 'link-local' | 'unspecified' | 'multicast' | 'reserved';

/** An address as a number: 32 bits (IPv4) or 128 bits (IPv6). */
interface Ip {
  version: 4 | 6;
  bits: bigint;
}

/** A block of addresses: `bits` with its first `prefix` bits significant. */
export interface Cidr {
  version: 4 | 6;
  bits: bigint;
  prefix: number;
  /** As the operator wrote it. */
  text: string;
}

/** IPv4 blocks that are not public, most specific first. */
const V4_BLOCKS: readonly (readonly [string, AddressKind])[] = [
  ['0.0.0.0/8', 'unspecified'],
  ['127.0.0.0/8', 'loopback'],
  ['10.0.0.0/8', 'private'],
  ['172.16.0.0/12', 'private'],
  ['192.168.0.0/16', 'private'],
  ['100.64.0.0/10', 'private'],
  ['169.254.0.0/16', 'link-local'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
];

/** IPv6 blocks that are not public (those carrying IPv4 addresses are unwrapped first). */
const V6_BLOCKS: readonly (readonly [string, AddressKind])[] = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'private'],
  ['fc00::/7', 'private'],
  ['ff00::/8', 'multicast'],
];

/** Prefixes whose last 32 bits are an IPv4 address. */
const V4_CARRIERS: readonly string[] = ['::ffff:0:0/96', '::ffff:0:0:0/96', '64:ff9b::/96', '::/96'];

const BLOCKS = [...V4_BLOCKS, ...V6_BLOCKS].map(([text, kind]) => ({ cidr: parseCidr(text)!, kind }));
const CARRIERS = V4_CARRIERS.map((text) => parseCidr(text)!);

/** The kind of `address` (an IP literal, IPv6 with or without brackets), or null when it is none. */
export function addressKind(address: string): AddressKind | null {
  const ip = parseIp(address);
  if (ip === null) return null;
  const seen = unwrapped(ip);
  return BLOCKS.find((b) => contains(b.cidr, seen))?.kind ?? 'public';
}

/** Whether `address` (an IP literal) lies in any of `blocks`, in its own or its IPv4 form. */
export function inBlocks(address: string, blocks: readonly Cidr[]): boolean {
  const ip = parseIp(address);
  if (ip === null) return false;
  const forms = [ip, unwrapped(ip)];
  return blocks.some((b) => forms.some((f) => contains(b, f)));
}

/** `text` (`10.0.0.0/8`, `fd00::/8`, or one address) as a block, or null when it is none. */
export function parseCidr(text: string): Cidr | null {
  const [addr = '', prefixText, extra] = text.trim().split('/');
  if (extra !== undefined) return null;
  const ip = parseIp(addr);
  if (ip === null) return null;
  const width = ip.version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? width : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : -1;
  if (prefix < 0 || prefix > width) return null;
  return { ...ip, bits: ip.bits & mask(ip.version, prefix), prefix, text: text.trim() };
}

/** The IPv4 address an IPv6 one carries (mapped, translated, compatible, NAT64), or the address itself. */
function unwrapped(ip: Ip): Ip {
  if (ip.version === 6 && ip.bits > 1n && CARRIERS.some((c) => contains(c, ip))) {
    return { version: 4, bits: ip.bits & 0xffff_ffffn };
  }
  return ip;
}

function contains(block: Cidr, ip: Ip): boolean {
  return block.version === ip.version && (ip.bits & mask(ip.version, block.prefix)) === block.bits;
}

function mask(version: 4 | 6, prefix: number): bigint {
  const width = BigInt(version === 4 ? 32 : 128);
  const all = (1n << width) - 1n;
  return (all >> (width - BigInt(prefix))) << (width - BigInt(prefix));
}

/** An IP literal as a number; IPv6 may be bracketed and carry a zone (`%eth0`, ignored). */
function parseIp(text: string): Ip | null {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (isIPv4(bare)) return { version: 4, bits: v4Bits(bare) };
  const noZone = bare.split('%')[0] ?? '';
  if (!isIPv6(noZone)) return null;
  return { version: 6, bits: v6Bits(noZone) };
}

function v4Bits(text: string): bigint {
  return text.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** A valid IPv6 literal (node:net said so) as 128 bits: `::` expanded, a dotted IPv4 tail read. */
function v6Bits(text: string): bigint {
  const groups = (half: string): number[] =>
    half === '' ? [] : half.split(':').flatMap((g) => (g.includes('.') ? v4Groups(g) : [Number.parseInt(g, 16)]));
  const [head = '', tail] = text.split('::');
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return all.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

function v4Groups(dotted: string): number[] {
  const n = Number(v4Bits(dotted));
  return [Math.floor(n / 0x10000), n % 0x10000];
}
