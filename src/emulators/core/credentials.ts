/**
 * The emulators' local credentials and the addresses they listen on. A credential the caller does
 * not give is drawn afresh from the system's random source at every start (never from the seed:
 * whoever knows a seed would know the token), so a token from an earlier start gets 401. An
 * emulator listening on an address other than loopback can be called from other machines: it
 * says so on standard error, in one line.
 */
import { randomInt } from 'node:crypto';
import { isIP } from 'node:net';
import { ValidationError } from '../../errors.js';

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** The longest credential an emulator accepts from its caller. */
export const LOCAL_TOKEN_MAX_LENGTH = 1024;
const TOKEN_RE = /^[\x21-\x7e]+$/;

/** `prefix` and `length` characters of `alphabet`, each drawn uniformly from the system's random source. */
export function freshToken(prefix: string, alphabet: string, length: number): string {
  let out = prefix;
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/** The credential given as option `field` (printable ASCII, no spaces), or `fresh()` when none is. */
export function localToken(given: string | undefined, field: string, fresh: () => string): string {
  if (given === undefined) return fresh();
  if (!TOKEN_RE.test(given) || given.length > LOCAL_TOKEN_MAX_LENGTH) {
    throw new ValidationError(field, `expected 1 to ${LOCAL_TOKEN_MAX_LENGTH} printable characters without spaces`);
  }
  return given;
}

/** Whether `address` (as bound or as given) is a loopback address: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackAddress(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '').toLowerCase();
  if (a === 'localhost' || a.endsWith('.localhost')) return true;
  const v4 = a.startsWith('::ffff:') && isIP(a.slice(7)) === 4 ? a.slice(7) : a;
  if (isIP(v4) === 4) return v4.startsWith('127.');
  if (isIP(a) === 6) return /^(0{0,4}:){2,7}0{0,3}1$/.test(a);
  return false;
}

/** The one warning line for the `name` emulator listening on `address`, or null when it is loopback. */
export function exposureWarning(name: string, address: string, port: number): string | null {
  if (isLoopbackAddress(address)) return null;
  return (
    `WARNING: the ${name} emulator listens on ${address} port ${port}, not a loopback address: anyone who ` +
    'can reach this machine can read its data with the printed token (use --host 127.0.0.1 to keep it local)'
  );
}

/** Where the exposure warning goes unless the caller says otherwise: one line on standard error. */
export function warnOnStderr(line: string): void {
  process.stderr.write(`${line}\n`);
}
