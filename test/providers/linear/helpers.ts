/** Requests against a running Linear emulator. */
import type { LinearEmulator } from '../../../src/emulators/linear/index.js';

/** A parsed JSON body (tests poke at it freely). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface Posted {
  status: number;
  headers: Headers;
  body: Json;
}

/** POSTs a GraphQL query with the emulator's API key (or `auth`: a full Authorization value, null: none). */
export async function gql(
  emulator: LinearEmulator,
  query: string,
  variables: Record<string, unknown> = {},
  auth: string | null = emulator.token,
): Promise<Posted> {
  const res = await fetch(emulator.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: res.status, headers: res.headers, body };
}
