/** What the Jira emulator's tests share: one request with the emulator's own Basic credential (or another). */
import type { JiraEmulator } from '../../../src/emulators/jira/index.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export function basic(token: string): string {
  return `Basic ${Buffer.from(token).toString('base64')}`;
}

export interface CallInit {
  method?: string;
  body?: unknown;
  /** The Authorization header: the emulator's own credential unless given; null sends none. */
  auth?: string | null;
}

/** One request to `emu`; the body parsed as JSON where it is JSON, else the text. */
export async function jiraCall(emu: JiraEmulator, path: string, init: CallInit = {}) {
  const auth = init.auth === undefined ? basic(emu.token) : init.auth;
  const res = await fetch(`${emu.url}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      ...(auth ? { authorization: auth } : {}),
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  let body: Json = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, headers: res.headers, body };
}
