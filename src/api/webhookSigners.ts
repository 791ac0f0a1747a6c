/**
 * Who may sign deliveries to an integration, as the receiving routes check them: the integration
 * (provider, org) and its accepted webhook secrets, read once and kept for SIGNERS_TTL_MS per
 * process, so a burst of deliveries costs no read and no decryption each. A kept entry that does
 * not match a signature is read again before the delivery is refused (a secret generated or rotated
 * in another process is accepted at once); a secret whose grace ended stays accepted at most
 * SIGNERS_TTL_MS longer. Only integrations with a secret are kept, at most SIGNERS_MAX.
 */
import type { IntegrationRow } from '../store/integrations.js';

export const SIGNERS_TTL_MS = 2_000;
export const SIGNERS_MAX = 10_000;

export interface Signers {
  integration: IntegrationRow;
  secrets: string[];
}

interface Kept {
  signers: Signers;
  until: number;
}

export class SignersCache {
  private readonly kept = new Map<string, Kept>();

  constructor(
    private readonly ttlMs = SIGNERS_TTL_MS,
    private readonly max = SIGNERS_MAX,
  ) {}

  /** The kept signers of `integrationId` at `now`, if still fresh. */
  get(integrationId: string, now: number): Signers | null {
    const k = this.kept.get(integrationId);
    if (!k) return null;
    if (k.until > now) return k.signers;
    this.kept.delete(integrationId);
    return null;
  }

  /** Keeps `signers` (with a secret) until `now` + TTL; the oldest entry goes beyond the bound. */
  set(integrationId: string, signers: Signers, now: number): void {
    if (signers.secrets.length === 0) return;
    this.kept.delete(integrationId);
    this.kept.set(integrationId, { signers, until: now + this.ttlMs });
    if (this.kept.size > this.max) this.kept.delete(this.kept.keys().next().value!);
  }

  /** Forgets what is kept of `integrationId` (its secret changed in this process). */
  forget(integrationId: string): void {
    this.kept.delete(integrationId);
  }
}

/** The signers this process keeps (one per process: every API server in it reads the same rows). */
export const keptSigners = new SignersCache();
