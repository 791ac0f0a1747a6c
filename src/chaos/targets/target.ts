/**
 * A provider's emulator as `syncrelay chaos --provider X` drives it: hostile while the engine's
 * faults run (the provider's own faults, edits and deletions during reads), quiet for the final
 * incremental, and the ground truth the normalized store is compared with at the end.
 */
import type { EmulatedIntegration } from '../../emulators/core/index.js';

export const CHAOS_PROVIDERS = ['github', 'linear', 'jira'] as const;
export type ChaosProvider = (typeof CHAOS_PROVIDERS)[number];

/** The normalized tables a ground truth can name. */
export type TruthTableName =
  | 'repositories'
  | 'teams'
  | 'members'
  | 'projects'
  | 'sprints'
  | 'work_items'
  | 'work_item_comments'
  | 'work_item_events'
  | 'pull_requests'
  | 'pull_request_reviews'
  | 'commits';

/** What one normalized table must hold for the chaos integration. */
export interface TruthTable {
  table: TruthTableName;
  /** The timestamp column compared with each row's version, or null: presence only. */
  versionColumn: 'updated_at' | null;
  /** external_id → the latest version (ms epoch; null when `versionColumn` is null). */
  rows: Map<string, number | null>;
  /**
   * The external ids the provider deleted (for a table a verify run tombstones): after the final
   * verify each one the store holds carries `deleted_at`, while no row of `rows` does.
   */
  deleted?: ReadonlySet<string>;
}

export type GroundTruth = TruthTable[];

export interface ChaosTarget {
  provider: ChaosProvider;
  /** The emulator's API root (127.0.0.1). */
  url: string;
  /** What the chaos integration is created with; the credential is the emulator's own random token. */
  integration: EmulatedIntegration<ChaosProvider, Record<string, unknown>>;
  /**
   * On: the provider's own faults (limit responses, 5xx, slow answers and, where the provider has
   * them, partial errors) and edits and deletions at the rate asked, until turned off again.
   */
  hostile(on: boolean): void;
  /** Resolves once every edit made so far is visible to every read (Jira's search lag; at once elsewhere). */
  settled(): Promise<void>;
  /** The rows the store must hold, each at its latest version, from the emulator's own records. */
  truth(): GroundTruth;
  /** What the emulator did, for the report: requests, injected faults answered, edits, deletions. */
  stats(): Record<string, number>;
  close(): Promise<void>;
}

export interface TargetOptions {
  /** Seeds the emulator's data, its faults and its edits. */
  seed: number;
  /** Edits (and deletions among them) per second while hostile. */
  editsPerSecond: number;
}
